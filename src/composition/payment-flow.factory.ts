import type { Config } from '../config.js';
import { createInvoiceCache } from '../adapters/invoice-cache.js';
import { withInvoiceCacheBus } from '../adapters/invoice-cache.bus.js';
import { invalidatingInvoices, invalidatingPayments, readThroughInvoices } from '../adapters/invoice-cache.decorator.js';
import type { MinistryAdapters } from '../adapters/ministry/ministry.types.js';
import { createPaymentSubmitter } from '../services/payment-submit.service.js';
import { createPaymentResolver } from '../services/payment-resolution.service.js';
import { createMinistryCancellationService } from '../services/ministry-cancellation.service.js';
import { createPaymentEnder } from '../services/payment-end.service.js';
import { confirmationCheckSchedule } from '../domain/check-schedule.js';
import type { Repositories } from './repositories.factory.js';
import type { Runtime } from './data.factory.js';

/** Invoice and payment rows behind the invoice cache, with the cache's own Redis bus when there is one. */
export async function createInvoiceStores(config: Config, runtime: Runtime, repos: Pick<Repositories, 'invoices' | 'payments'>) {
  const localCache = createInvoiceCache(config.invoiceCache);
  // Instances that share Redis (for rate limits) also share invoice-cache invalidations.
  const bus = config.redisUrl ? await withInvoiceCacheBus(localCache, config.redisUrl, runtime.logger) : null;
  const cache = bus ?? localCache;
  return {
    // Every write that changes invoice rows goes through these, so no cached read outlives it.
    invoices: invalidatingInvoices(repos.invoices, cache),
    payments: invalidatingPayments(repos.payments, cache),
    cachedInvoices: readThroughInvoices(repos.invoices, cache),
    /** Without the invalidation around writes: the reports only read payments. */
    uncachedPayments: repos.payments,
    close: async () => bus?.close(),
  };
}

export type InvoiceStores = Awaited<ReturnType<typeof createInvoiceStores>>;

export interface PaymentFlowDeps {
  stores: InvoiceStores;
  repos: Pick<Repositories, 'events' | 'ministryCancellations'>;
  ministries: MinistryAdapters;
}

/** A payment's way through the ministry: submit, check, resolve, and the cancellations owed to it. */
export function createPaymentFlow(config: Config, runtime: Runtime, deps: PaymentFlowDeps) {
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

export type PaymentFlow = ReturnType<typeof createPaymentFlow>;
