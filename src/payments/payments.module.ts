import type { Config } from '../config/config.js';
import type { MinistryAdapters } from '../domain/ministry.port.js';
import type { Job } from '../work/job-runner.js';
import type { DatabaseOutage } from '../db/database-outage.monitor.js';
import type { QrService } from './qr.service.js';
import type { AdaptiveLimit } from '../domain/adaptive-limit.js';
import type { KeyedSlots } from '../work/keyed-slots.js';
import { createPaymentService, type PaymentService } from './payment.service.js';
import { createPaymentCancelService } from './payment-cancel.service.js';
import { createPaymentLiveCheck } from './payment-live-check.service.js';
import { createPaymentConfirmationJob } from './payment-confirmation.job.js';
import type { PaymentResolver } from './payment-resolution.service.js';
import { createPaymentSubmitter } from './payment-submit.service.js';
import { createPaymentResolver } from './payment-resolution.service.js';
import { createMinistryCancellationService } from './ministry-cancellation.service.js';
import { createPaymentEnder } from './payment-end.service.js';
import { confirmationCheckSchedule } from '../domain/check-schedule.js';
import type { Source, StaleLeaseReport } from '../domain/vocabulary.js';
import type { Clock } from '../domain/clock.port.js';
import type { Logger } from '../domain/logger.port.js';
import type { Tracer } from '../domain/tracer.port.js';
import type { LeasePolicy } from '../domain/lease-policy.js';
import type { Metrics } from '../adapters/metrics.js';
import type { InvoiceRepository } from '../db/repositories/invoice.repository.js';
import type { Outbox } from '../db/outbox.statements.js';
import type { IdempotencyRepository } from '../db/repositories/idempotency.repository.js';
import type { PaymentRepository } from './payment.repository.js';
import type { MinistryCancellationRepository } from './ministry-cancellation.repository.js';

/*
 * The rest of the service reaches a payment's life through this file and the machine's table
 * (payment.machine.ts) only: test/unit/import-graph.test.ts holds every other file of this folder
 * private to it.
 */
export type { PaymentService } from './payment.service.js';
export type { PaymentResolver } from './payment-resolution.service.js';
export type { PaymentRepository } from './payment.repository.js';
export { createPaymentRepository } from './payment.repository.js';
export { createMinistryCancellationRepository } from './ministry-cancellation.repository.js';
export { billNumberFor, createQrService, type QrService } from './qr.service.js';

/** What the partner's reports read of payments: the day's list and which settled payments are its own. */
export type PaymentReports = Pick<PaymentRepository, 'listForPartnerBefore' | 'ownSettledIds'>;

/** What the sandbox's controls touch: a partner's payment found, and its next check brought forward. */
export type SandboxPayments = Pick<PaymentRepository, 'findForPartner' | 'reopenStatusCheck'>;

/** What a partner's case reads of payments: the partner's own found, and a payment's row for the case's fresh check. */
export type CasePayments = Pick<PaymentRepository, 'findForPartner' | 'findById'>;

/** What a payment's life runs on, of the process's runtime (composition/data.factory.ts makes it once). */
export interface PaymentsRuntime {
  now: Clock;
  logger: Logger;
  metrics: Pick<Metrics, 'ministryConcurrencyLimit' | 'confirmationLag'>;
  tracer: Tracer;
  leases: LeasePolicy;
  onStaleLease: StaleLeaseReport;
}

/** The invoice and payment rows a payment's life writes through: behind the invoice cache, which forgets what they change. */
export interface PaymentStores {
  invoices: InvoiceRepository;
  payments: PaymentRepository;
}

export interface PaymentFlowDeps {
  stores: PaymentStores;
  repos: { events: Outbox; ministryCancellations: MinistryCancellationRepository };
  ministries: MinistryAdapters;
}

/** A payment's way through the ministry: submit, check, resolve, and the cancellations owed to it. */
function createPaymentFlow(config: Config, runtime: PaymentsRuntime, deps: PaymentFlowDeps) {
  const { stores, ministries } = deps;
  const { logger: log, now } = runtime;
  const { events, ministryCancellations: cancellations } = deps.repos;
  const schedule = confirmationCheckSchedule(config.confirmPollMs, config.confirmBackoffMaxMs);
  const ender = createPaymentEnder({ payments: stores.payments, events, cancellations, expiryMs: config.paymentExpiryMs, now });
  const ministryCancellation = createMinistryCancellationService({ cancellations, ministries, schedule, finishIntent: ender.finishIntent, onStaleLease: runtime.onStaleLease, log, now });
  const submitter = createPaymentSubmitter({ payments: stores.payments, invoices: stores.invoices, events, ministries, cancellations, ministryCancellation, log, now });
  const resolver = createPaymentResolver({
    payments: stores.payments,
    invoices: stores.invoices,
    events,
    ministries,
    submitter,
    ender,
    cancellations,
    ministryCancellation,
    expiryMs: config.paymentExpiryMs,
    unknownOutcomeMs: config.paymentUnknownOutcomeMs,
    // The check makes the expiry's cancel call itself, as a partner's request makes its own.
    cancelGraceMs: runtime.leases.partnerCancel,
    now,
    onConfirmed: (source, lagMs) => runtime.metrics.confirmationLag.observe({ source }, Math.max(lagMs, 0) / 1000),
  });
  return { cancellations, schedule, ministryCancellation, submitter, resolver };
}

/** What the rest of the service needs of a payment's life. */
export interface PaymentsModule {
  /** The partner API's use cases: pay, read (live), cancel. */
  service: PaymentService;
  /** Brings one payment up to date with its ministry: the reconciliation uses it. */
  resolver: PaymentResolver;
  /** Checks unresolved payments and makes the cancellations owed to the ministries. */
  confirmationJob: Job;
}

export interface PaymentsModuleDeps extends PaymentFlowDeps {
  repos: PaymentFlowDeps['repos'] & { idempotency: IdempotencyRepository };
  qr: QrService;
  /** Each ministry system's limit and the status-check slots within it, shared by the job and the live reads. */
  checks: { limits: Record<Source, AdaptiveLimit>; slots: KeyedSlots };
  outage: DatabaseOutage;
  /** A check resolved a payment: its webhook can go out now. */
  onResolved: () => void;
}

/** A payment's life, built once: its use cases, its way through the ministry and the job that drives it. */
export function createPaymentsModule(config: Config, runtime: PaymentsRuntime, deps: PaymentsModuleDeps): PaymentsModule {
  const { stores } = deps;
  const { now, leases, logger: log } = runtime;
  const flow = createPaymentFlow(config, runtime, deps);
  const cancels = createPaymentCancelService({
    payments: stores.payments,
    invoices: stores.invoices,
    cancellations: flow.cancellations,
    attempt: (row) => flow.ministryCancellation.attempt(row),
    graceMs: leases.partnerCancel,
    now,
  });
  const liveCheck = createPaymentLiveCheck({
    payments: stores.payments,
    resolver: flow.resolver,
    slots: deps.checks.slots,
    limits: deps.checks.limits,
    onLimit: (source, limit) => runtime.metrics.ministryConcurrencyLimit.set({ source }, limit),
    leaseMs: leases.statusCheck,
    slotWaitMs: config.confirmLiveWaitMs,
    log,
    onStaleLease: runtime.onStaleLease,
    now,
  });
  const service = createPaymentService({
    payments: stores.payments,
    invoices: stores.invoices,
    idempotency: deps.repos.idempotency,
    ministries: deps.ministries,
    submitter: flow.submitter,
    liveCheck,
    cancels,
    qr: deps.qr,
    log,
    ministryTimeoutMs: config.ministryTimeoutMs,
    idempotencyTtlMs: config.idempotencyTtlMs,
    idempotencyLeaseMs: leases.idempotency,
    onStaleLease: runtime.onStaleLease,
    tracer: runtime.tracer,
    now,
  });
  const confirmationJob = createPaymentConfirmationJob({
    payments: stores.payments,
    cancellations: flow.cancellations,
    resolver: flow.resolver,
    ministryCancellation: flow.ministryCancellation,
    schedule: flow.schedule,
    limits: deps.checks.limits,
    slots: deps.checks.slots,
    maxPerSource: config.confirmConcurrencyMaxPerSource,
    onLimit: (source, limit) => runtime.metrics.ministryConcurrencyLimit.set({ source }, limit),
    leaseMs: leases.confirmation,
    passDeadlineMs: leases.passes.confirmation,
    log,
    outage: deps.outage,
    onStaleLease: runtime.onStaleLease,
    now,
    tracer: runtime.tracer,
    onResolved: deps.onResolved,
  });
  return { service, resolver: flow.resolver, confirmationJob };
}
