import { sandboxEnabled, type Config } from '../config.js';
import type { MinistryAdapters } from '../adapters/ministry/ministry.types.js';
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
import type { Source } from '../domain/vocabulary.js';
import type { AdaptiveLimit } from '../domain/adaptive-limit.js';
import type { KeyedSlots } from '../work/keyed-slots.js';
import { createInvoiceStores, createPaymentFlow, type InvoiceStores, type PaymentFlow } from './payment-flow.factory.js';
import type { Repositories } from './repositories.factory.js';
import type { Runtime } from './data.factory.js';

export interface PaymentsDeps {
  repos: Repositories;
  ministries: MinistryAdapters;
  /** Each ministry system's limit and the status-check slots within it, shared with the confirmation job. */
  checks: { limits: Record<Source, AdaptiveLimit>; slots: KeyedSlots };
  /** The simulator's control API, for the sandbox's approve. */
  ministryUrls: Record<Source, string>;
}

function paymentService(config: Config, runtime: Runtime, parts: { stores: InvoiceStores; flow: PaymentFlow; qr: QrService; deps: PaymentsDeps }) {
  const { stores, flow, deps } = parts;
  const { now, leases } = runtime;
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
    log: runtime.logger,
    onStaleLease: runtime.onStaleLease,
    now,
  });
  return createPaymentService({
    payments: stores.payments,
    invoices: stores.invoices,
    idempotency: deps.repos.idempotency,
    ministries: deps.ministries,
    submitter: flow.submitter,
    liveCheck,
    cancels,
    qr: parts.qr,
    log: runtime.logger,
    ministryTimeoutMs: config.ministryTimeoutMs,
    idempotencyTtlMs: config.idempotencyTtlMs,
    idempotencyLeaseMs: leases.idempotency,
    onStaleLease: runtime.onStaleLease,
    tracer: runtime.tracer,
    now,
  });
}

function sandboxServices(config: Config, runtime: Runtime, parts: { stores: InvoiceStores; ministries: MinistryAdapters; ministryUrls: Record<Source, string> }): { sandbox?: SandboxService } {
  if (!sandboxEnabled(config.appEnv)) return {};
  const { stores, ministries } = parts;
  const simulator = createSimulatorControlClient({ baseUrl: parts.ministryUrls.mof, timeoutMs: config.ministryTimeoutMs });
  return {
    sandbox: createSandboxService({ payments: stores.payments, invoices: stores.invoices, simulator, ministry: ministries.mof, transaction: stores.payments.transaction, now: runtime.now }),
  };
}

/** Invoices, payments and what partners read about them: reports, events and the QR landing page. */
export async function createPayments(config: Config, runtime: Runtime, deps: PaymentsDeps) {
  const { repos, ministries } = deps;
  const { logger: log, now } = runtime;
  const qrConfig = await loadQrConfig();
  const stores = await createInvoiceStores(config, runtime, repos);
  const flow = createPaymentFlow(config, runtime, { stores, repos, ministries });
  // One QR service: the landing page rebuilds the very QR and links POST /payments answered with.
  const qr = createQrService({ banks: qrConfig.banks, schemes: qrConfig.schemes, shortUrlBase: config.shortUrlBase });
  const services = {
    invoices: createInvoiceService({
      invoices: stores.cachedInvoices,
      ministries,
      log,
      // Counted with the malformed answers: to an operator, a value the database refused is one.
      onUnstorable: (source, operation) => runtime.metrics.upstreamErrors.inc({ source, operation, kind: 'malformed' }),
      now,
    }),
    payments: paymentService(config, runtime, { stores, flow, qr, deps }),
    reports: createReportService({ reports: repos.reports, payments: stores.uncachedPayments, ministries, log, now }),
    events: createEventService({ events: repos.eventLog }),
    shortLinks: createShortLinkService({ links: repos.shortLinks, qr }),
    ...sandboxServices(config, runtime, { stores, ministries, ministryUrls: deps.ministryUrls }),
  };
  return { services, stores, flow, close: stores.close };
}

export type Payments = Awaited<ReturnType<typeof createPayments>>;
