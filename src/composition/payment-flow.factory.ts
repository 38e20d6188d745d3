import type { Logger as PinoLogger } from 'pino';
import type { Config } from '../config.js';
import type { Db } from '../db/database.js';
import { createInvoiceRepository } from '../db/repositories/invoice.repository.js';
import { createPaymentRepository } from '../db/repositories/payment.repository.js';
import { createEventRepository } from '../db/repositories/event.repository.js';
import { createMinistryCancellationRepository } from '../db/repositories/ministry-cancellation.repository.js';
import { createInvoiceCache } from '../adapters/invoice-cache.js';
import { withInvoiceCacheBus } from '../adapters/invoice-cache.bus.js';
import { invalidatingInvoices, invalidatingPayments, readThroughInvoices } from '../adapters/invoice-cache.decorator.js';
import type { MinistryAdapters } from '../adapters/ministry/ministry.types.js';
import type { Metrics } from '../adapters/metrics.js';
import { createPaymentSubmitter } from '../services/payment-submit.service.js';
import { createPaymentResolver } from '../services/payment-resolution.service.js';
import { createMinistryCancellationService } from '../services/ministry-cancellation.service.js';
import { createPaymentEnder } from '../services/payment-end.service.js';
import { confirmationCheckSchedule } from '../domain/check-schedule.js';
import type { StaleLeaseReport } from '../domain/vocabulary.js';
import type { Clock } from '../domain/clock.port.js';
import { leasePolicyOf } from './data.factory.js';

/** Invoice and payment rows behind the invoice cache, with the cache's own Redis bus when there is one. */
export async function createInvoiceStores(config: Config, deps: { db: Db; logger: PinoLogger; now: Clock }) {
  const invoiceRepo = createInvoiceRepository(deps.db, deps.now);
  const paymentRepo = createPaymentRepository(deps.db, deps.now);
  const localCache = createInvoiceCache(config.invoiceCache);
  // Instances that share Redis (for rate limits) also share invoice-cache invalidations.
  const bus = config.redisUrl ? await withInvoiceCacheBus(localCache, config.redisUrl, deps.logger) : null;
  const cache = bus ?? localCache;
  return {
    // Every write that changes invoice rows goes through these, so no cached read outlives it.
    invoices: invalidatingInvoices(invoiceRepo, cache),
    payments: invalidatingPayments(paymentRepo, cache),
    cachedInvoices: readThroughInvoices(invoiceRepo, cache),
    /** Without the invalidation around writes: the reports only read payments. */
    uncachedPayments: paymentRepo,
    close: async () => bus?.close(),
  };
}

export type InvoiceStores = Awaited<ReturnType<typeof createInvoiceStores>>;

export interface PaymentFlowDeps {
  db: Db;
  stores: InvoiceStores;
  ministries: MinistryAdapters;
  logger: PinoLogger;
  metrics: Metrics;
  onStaleLease: StaleLeaseReport;
  now: Clock;
}

/** A payment's way through the ministry: submit, check, resolve, and the cancellations owed to it. */
export function createPaymentFlow(config: Config, deps: PaymentFlowDeps) {
  const { stores, ministries, logger: log, now } = deps;
  const events = createEventRepository({ now, firstAttemptDelayMs: config.webhookRetryScheduleMs[0] });
  const cancellations = createMinistryCancellationRepository(deps.db);
  const schedule = confirmationCheckSchedule(config.confirmPollMs, config.confirmBackoffMaxMs);
  const ender = createPaymentEnder({ payments: stores.payments, events, cancellations, expiryMs: config.paymentExpiryMs, now });
  const ministryCancellation = createMinistryCancellationService({ cancellations, ministries, schedule, finishIntent: ender.finishIntent, onStaleLease: deps.onStaleLease, log, now });
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
    cancelGraceMs: leasePolicyOf(config).partnerCancel,
    now,
    onConfirmed: (source, lagMs) => deps.metrics.confirmationLag.observe({ source }, Math.max(lagMs, 0) / 1000),
  });
  return { cancellations, schedule, ministryCancellation, submitter, resolver };
}

export type PaymentFlow = ReturnType<typeof createPaymentFlow>;
