import { sandboxEnabled, type Config } from '../config/config.js';
import type { MinistryAdapters } from '../domain/ministry.port.js';
import { createInvoiceCache } from '../adapters/invoice-cache.js';
import { withInvoiceCacheBus } from '../adapters/invoice-cache.bus.js';
import { invalidatingInvoices, invalidatingPayments, readThroughInvoices } from './invoice-cache.decorator.js';
import { loadQrConfig } from '../adapters/qr-config.loader.js';
import { createSimulatorControlClient } from '../adapters/simulator-control.client.js';
import { createInvoiceService } from '../services/invoice.service.js';
import { createReportService } from '../services/report.service.js';
import { createEventService } from '../services/event.service.js';
import { createShortLinkService } from '../services/short-link.service.js';
import { createSandboxService, type SandboxService } from '../services/sandbox.service.js';
import { createPaymentsModule, createQrService, type PaymentsModule, type PaymentsModuleDeps } from '../payments/payments.module.js';
import type { Source } from '../domain/vocabulary.js';
import type { DatabaseOutage } from '../db/database-outage.monitor.js';
import type { Repositories } from './repositories.factory.js';
import type { Runtime } from './data.factory.js';

/** Invoice and payment rows behind the invoice cache, with the cache's own Redis bus when there is one. */
async function createInvoiceStores(config: Config, runtime: Runtime, repos: Pick<Repositories, 'invoices' | 'payments'>) {
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

type InvoiceStores = Awaited<ReturnType<typeof createInvoiceStores>>;

export interface PaymentsDeps {
  repos: Repositories;
  ministries: MinistryAdapters;
  checks: PaymentsModuleDeps['checks'];
  outage: DatabaseOutage;
  /** A check resolved a payment: the webhook job delivers its event now. */
  onResolved: () => void;
  /** The simulator's control API, for the sandbox's approve. */
  ministryUrls: Record<Source, string>;
}

function sandboxServices(config: Config, runtime: Runtime, parts: { stores: InvoiceStores; ministries: MinistryAdapters; ministryUrls: Record<Source, string> }): { sandbox?: SandboxService } {
  if (!sandboxEnabled(config.appEnv)) return {};
  const { stores, ministries } = parts;
  const simulator = createSimulatorControlClient({ baseUrl: parts.ministryUrls.mof, timeoutMs: config.ministryTimeoutMs });
  return {
    sandbox: createSandboxService({ payments: stores.payments, invoices: stores.invoices, simulator, ministry: ministries.mof, transaction: stores.payments.transaction, now: runtime.now }),
  };
}

/** Invoices, the payment's life (src/payments) and what partners read about them: reports, events and the QR landing page. */
export async function createPayments(config: Config, runtime: Runtime, deps: PaymentsDeps) {
  const { repos, ministries } = deps;
  const { logger: log, now } = runtime;
  const qrConfig = await loadQrConfig();
  const stores = await createInvoiceStores(config, runtime, repos);
  // One QR service: the landing page rebuilds the very QR and links POST /payments answered with.
  const qr = createQrService({ banks: qrConfig.banks, schemes: qrConfig.schemes, shortUrlBase: config.shortUrlBase });
  const module: PaymentsModule = createPaymentsModule(config, runtime, { stores, repos, ministries, qr, checks: deps.checks, outage: deps.outage, onResolved: deps.onResolved });
  const services = {
    invoices: createInvoiceService({
      invoices: stores.cachedInvoices,
      ministries,
      log,
      // Counted with the malformed answers: to an operator, a value the database refused is one.
      onUnstorable: (source, operation) => runtime.metrics.upstreamErrors.inc({ source, operation, kind: 'malformed' }),
      now,
    }),
    payments: module.service,
    reports: createReportService({ reports: repos.reports, payments: stores.uncachedPayments, ministries, log, now }),
    events: createEventService({ events: repos.eventLog }),
    shortLinks: createShortLinkService({ links: repos.shortLinks, qr }),
    ...sandboxServices(config, runtime, { stores, ministries, ministryUrls: deps.ministryUrls }),
  };
  return { services, module, close: stores.close };
}

export type Payments = Awaited<ReturnType<typeof createPayments>>;
