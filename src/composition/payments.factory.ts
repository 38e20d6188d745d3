import type { Logger as PinoLogger } from 'pino';
import { sandboxEnabled, type Config } from '../config.js';
import type { Db } from '../db/database.js';
import { createIdempotencyRepository } from '../db/repositories/idempotency.repository.js';
import { createReportRepository } from '../db/repositories/report.repository.js';
import { createShortLinkRepository } from '../db/repositories/short-link.repository.js';
import { createEventLogRepository } from '../db/repositories/event-log.repository.js';
import type { MinistryAdapters } from '../adapters/ministry/ministry.types.js';
import type { Metrics } from '../adapters/metrics.js';
import { loadQrConfig } from '../adapters/qr-config.loader.js';
import { createSimulatorControlClient } from '../adapters/simulator-control.client.js';
import { createPaymentService } from '../services/payment.service.js';
import { createPaymentCancelService } from '../services/payment-cancel.service.js';
import { createQrService, type QrService } from '../services/qr.service.js';
import { createInvoiceService } from '../services/invoice.service.js';
import { createReportService } from '../services/report.service.js';
import { createEventService } from '../services/event.service.js';
import { createShortLinkService } from '../services/short-link.service.js';
import { createSandboxService, type SandboxService } from '../services/sandbox.service.js';
import { createPaymentLiveCheck } from '../services/payment-live-check.service.js';
import type { Source, StaleLeaseReport } from '../domain/vocabulary.js';
import type { AdaptiveLimit } from '../domain/adaptive-limit.js';
import type { LeasePolicy } from '../domain/lease-policy.js';
import type { KeyedSlots } from '../work/keyed-slots.js';
import type { Clock } from '../domain/clock.port.js';
import type { Tracer } from '../domain/tracer.port.js';
import { createInvoiceStores, createPaymentFlow, type InvoiceStores, type PaymentFlow } from './payment-flow.factory.js';

export interface PaymentsDeps {
  db: Db;
  logger: PinoLogger;
  metrics: Metrics;
  ministries: MinistryAdapters;
  onStaleLease: StaleLeaseReport;
  leases: LeasePolicy;
  /** Each ministry system's limit and the status-check slots within it, shared with the confirmation job. */
  checks: { limits: Record<Source, AdaptiveLimit>; slots: KeyedSlots };
  /** The simulator's control API, for the sandbox's approve. */
  ministryUrls: Record<Source, string>;
  tracer: Tracer;
  now: Clock;
}

interface PaymentServiceParts {
  stores: InvoiceStores;
  flow: PaymentFlow;
  qr: QrService;
  db: Db;
  ministries: MinistryAdapters;
  logger: PinoLogger;
  metrics: Metrics;
  onStaleLease: StaleLeaseReport;
  leases: LeasePolicy;
  checks: PaymentsDeps['checks'];
  tracer: Tracer;
  now: Clock;
}

function liveCheckOf(config: Config, parts: PaymentServiceParts) {
  return createPaymentLiveCheck({
    payments: parts.stores.payments,
    resolver: parts.flow.resolver,
    slots: parts.checks.slots,
    limits: parts.checks.limits,
    onLimit: (source, limit) => parts.metrics.ministryConcurrencyLimit.set({ source }, limit),
    leaseMs: parts.leases.statusCheck,
    slotWaitMs: config.confirmLiveWaitMs,
    log: parts.logger,
    onStaleLease: parts.onStaleLease,
    now: parts.now,
  });
}

function paymentService(config: Config, parts: PaymentServiceParts) {
  const { stores, flow, now } = parts;
  const cancels = createPaymentCancelService({
    payments: stores.payments,
    invoices: stores.invoices,
    cancellations: flow.cancellations,
    attempt: (row) => flow.ministryCancellation.attempt(row),
    graceMs: parts.leases.partnerCancel,
    now,
  });
  const idempotency = createIdempotencyRepository(parts.db);
  const payments = createPaymentService({
    payments: stores.payments,
    invoices: stores.invoices,
    idempotency,
    ministries: parts.ministries,
    submitter: flow.submitter,
    liveCheck: liveCheckOf(config, parts),
    cancels,
    qr: parts.qr,
    log: parts.logger,
    ministryTimeoutMs: config.ministryTimeoutMs,
    idempotencyTtlMs: config.idempotencyTtlMs,
    idempotencyLeaseMs: parts.leases.idempotency,
    onStaleLease: parts.onStaleLease,
    tracer: parts.tracer,
    now,
  });
  return { payments, idempotency };
}

function sandboxServices(config: Config, parts: { stores: InvoiceStores; ministries: MinistryAdapters; ministryUrls: Record<Source, string>; now: Clock }): { sandbox?: SandboxService } {
  if (!sandboxEnabled(config.appEnv)) return {};
  const { stores, ministries, now } = parts;
  const simulator = createSimulatorControlClient({ baseUrl: parts.ministryUrls.mof, timeoutMs: config.ministryTimeoutMs });
  return {
    sandbox: createSandboxService({ payments: stores.payments, invoices: stores.invoices, simulator, ministry: ministries.mof, transaction: stores.payments.transaction, now }),
  };
}

/** Invoices, payments and what partners read about them: reports, events and the QR landing page. */
export async function createPayments(config: Config, deps: PaymentsDeps) {
  const { db, logger: log, ministries, now } = deps;
  const qrConfig = await loadQrConfig();
  const stores = await createInvoiceStores(config, { db, logger: log, now });
  const flow = createPaymentFlow(config, { db, stores, ministries, logger: log, metrics: deps.metrics, onStaleLease: deps.onStaleLease, now });
  // One QR service: the landing page rebuilds the very QR and links POST /payments answered with.
  const qr = createQrService({ banks: qrConfig.banks, schemes: qrConfig.schemes, shortUrlBase: config.shortUrlBase });
  const parts = { stores, flow, qr, db, ministries, logger: log, metrics: deps.metrics, onStaleLease: deps.onStaleLease, leases: deps.leases, checks: deps.checks, tracer: deps.tracer, now };
  const { payments, idempotency } = paymentService(config, parts);
  const reportRepo = createReportRepository(db);
  const services = {
    invoices: createInvoiceService({
      invoices: stores.cachedInvoices,
      ministries,
      log,
      // Counted with the malformed answers: to an operator, a value the database refused is one.
      onUnstorable: (source, operation) => deps.metrics.upstreamErrors.inc({ source, operation, kind: 'malformed' }),
      now,
    }),
    payments,
    reports: createReportService({ reports: reportRepo, payments: stores.uncachedPayments, ministries, log, now }),
    events: createEventService({ events: createEventLogRepository(db) }),
    shortLinks: createShortLinkService({ links: createShortLinkRepository(db), qr }),
    ...sandboxServices(config, { stores, ministries, ministryUrls: deps.ministryUrls, now }),
  };
  return { services, stores, flow, idempotency, reportRepo, close: stores.close };
}

export type Payments = Awaited<ReturnType<typeof createPayments>>;
