import type { Logger as PinoLogger } from 'pino';
import { sandboxEnabled, type Config } from './config.js';
import type { Db } from './db/database.js';
import type { DatabaseOutage } from './db/database-outage.monitor.js';
import type { RequestActivity } from './http/plugins/request-activity.plugin.js';
import { createPartnerRepository } from './db/repositories/partner.repository.js';
import { createInvoiceRepository } from './db/repositories/invoice.repository.js';
import { createPartnerService, type PartnerService } from './services/partner.service.js';
import { createInvoiceService, type InvoiceService } from './services/invoice.service.js';
import { createInvoiceCache } from './adapters/invoice-cache.js';
import { withInvoiceCacheBus } from './adapters/invoice-cache.bus.js';
import { invalidatingInvoices, invalidatingPayments, readThroughInvoices } from './adapters/invoice-cache.decorator.js';
import { createRateLimitersFromConfig } from './adapters/rate-limit/rate-limit.factory.js';
import type { RateLimitService } from './services/rate-limit/rate-limit.service.js';
import type { Metrics } from './adapters/metrics.js';
import { createPaymentRepository } from './db/repositories/payment.repository.js';
import { createIdempotencyRepository } from './db/repositories/idempotency.repository.js';
import { createEventRepository } from './db/repositories/event.repository.js';
import { createPaymentService, type PaymentService } from './services/payment.service.js';
import { createPaymentSubmitter } from './services/payment-submit.service.js';
import { createPaymentResolver } from './services/payment-resolution.service.js';
import { createMinistryCancellationService } from './services/ministry-cancellation.service.js';
import { createPartnerCancelFinisher, createPaymentCancelService } from './services/payment-cancel.service.js';
import { createMinistryCancellationRepository } from './db/repositories/ministry-cancellation.repository.js';
import { createReportService, type ReportService } from './services/report.service.js';
import { createSandboxService, type SandboxService } from './services/sandbox.service.js';
import { createShortLinkService, type ShortLinkService } from './services/short-link.service.js';
import { createShortLinkRepository } from './db/repositories/short-link.repository.js';
import { createQrService } from './services/qr.service.js';
import { createSimulatorControlClient } from './adapters/simulator-control.client.js';
import { loadQrConfig } from './adapters/qr-config.loader.js';
import { confirmationLeaseMs, createPaymentConfirmationJob } from './jobs/payment-confirmation.job.js';
import { confirmationCheckSchedule } from './domain/check-schedule.js';
import { clockTimeMinutes } from './domain/finance-day.js';
import { webhookTargetPolicy } from './domain/webhook-target.js';
import { createWebhookDeliveryJob } from './jobs/webhook-delivery.job.js';
import { createRetentionSweepJob } from './jobs/retention-sweep.job.js';
import { createRetentionRepository } from './db/repositories/retention.repository.js';
import { createReportRepository } from './db/repositories/report.repository.js';
import { createCounterRepository } from './db/repositories/counter.repository.js';
import { createCounterRollupJob } from './jobs/counter-rollup.job.js';
import { createWebhookRepository } from './db/repositories/webhook.repository.js';
import { createWebhookDeliveryRepository } from './db/repositories/webhook-delivery.repository.js';
import { createDeviceRepository } from './db/repositories/device.repository.js';
import { createSecretCipher } from './domain/secret-cipher.js';
import { createWebhookService, type WebhookService } from './services/webhook.service.js';
import { createEventService, type EventService } from './services/event.service.js';
import { createEventLogRepository } from './db/repositories/event-log.repository.js';
import { createDeliveryLogRepository } from './db/repositories/delivery-log.repository.js';
import { createWebhookHealthJob } from './jobs/webhook-health.job.js';
import { createWebhookDeliveryService } from './services/webhook-delivery.service.js';
import { createWebhookHttpClient } from './adapters/webhook-http.client.js';
import { createTargetGuard } from './adapters/webhook-target.guard.js';
import { createDeviceService, type DeviceService } from './services/device.service.js';
import { createPushSender } from './adapters/push-sender.js';
import type { MinistryAdapters } from './adapters/ministry/ministry.types.js';
import type { Source } from './domain/vocabulary.js';
import { startJobs, type Job, type RunningJobs } from './jobs/job-runner.js';
import type { Clock } from './domain/clock.port.js';
import type { AdminServices } from './admin-app.js';
import { createReconciliationRepository } from './db/repositories/reconciliation.repository.js';
import { createAuditRepository } from './db/repositories/audit.repository.js';
import { createPaymentSearchRepository } from './db/repositories/payment-search.repository.js';
import { createReconciliationService } from './services/reconciliation.service.js';
import { createBackOfficeService } from './services/back-office.service.js';
import { createPartnerAdminService } from './services/partner-admin.service.js';
import { createReconciliationJob } from './jobs/reconciliation.job.js';
import { createPushDeliveryRepository } from './db/repositories/push-delivery.repository.js';
import { createPushDeliveryService } from './services/push-delivery.service.js';
import { createPushDeliveryJob } from './jobs/push-delivery.job.js';
import { createData } from './composition/data.factory.js';
import { createMinistries } from './composition/ministries.factory.js';
import { createShutdown } from './composition/shutdown.factory.js';

export { createLogger } from './composition/data.factory.js';

export interface AppServices {
  partners: PartnerService;
  invoices: InvoiceService;
  payments: PaymentService;
  reports: ReportService;
  rateLimiter: RateLimitService;
  /** Failed authentications per client address, checked before a key is looked up. */
  authFailureLimiter: RateLimitService;
  /** Requests per client address to the QR landing page, which has no key to limit by. */
  shortLinkLimiter: RateLimitService;
  webhooks: WebhookService;
  /** The partner's own payment events (GET /events). */
  events: EventService;
  devices: DeviceService;
  /** The public QR landing page behind `qrpay.shortUrl` (`GET /q/{paymentId}`). */
  shortLinks: ShortLinkService;
  /** Sandbox-only helpers (the sandbox page's simulator approve); absent in production. */
  sandbox?: SandboxService;
}

export interface Deps {
  config: Config;
  logger: PinoLogger;
  db: Db;
  ministries: MinistryAdapters;
  metrics: Metrics;
  services: AppServices;
  /** The operator's services, on the admin listener. */
  admin: AdminServices;
  isDbReady: () => Promise<boolean>;
  /** Whether the database is away as this process last saw it; logs an outage once. */
  dbOutage: DatabaseOutage;
  /** Background jobs (confirmation poller, webhook delivery, retention sweep); tests run their passes directly. */
  jobs: Job[];
  startJobs(): RunningJobs;
  /** On the embedded database: the partner API tells it which requests are being served, so background work waits for the time between them. */
  requestActivity?: RequestActivity;
  close(): Promise<void>;
}

export interface DepsOptions {
  /** Resolved upstream base URLs (the built-in simulator's when the config leaves them unset). */
  ministryUrls: Record<Source, string>;
  logger?: PinoLogger;
  /** PostgreSQL schema, for test isolation. */
  dbSchema?: string;
  now?: Clock;
  /** Rate-limiter clock in epoch ms; defaults to `now`, else Date.now (memory) or the Redis server clock. */
  rateLimitClock?: () => number;
  /** Put before the rate limiters' Redis keys: a test that moves their clock keeps its own counts. */
  rateLimitNamespace?: string;
  /** An in-memory PGlite starts from this image of a database (tests: one migrated image per run). */
  databaseImage?: Blob;
}

function epochMs(now: (() => Date) | undefined): (() => number) | undefined {
  return now ? () => now().getTime() : undefined;
}

/** Plain factories wired by hand: every dependency is explicit and replaceable in tests. */
export async function createDeps(config: Config, opts: DepsOptions): Promise<Deps> {
  const data = await createData(config, opts);
  const { db, logger, metrics, dbOutage, priority, isDbReady, onStaleLease } = data;
  const ministryParts = createMinistries(config, { urls: opts.ministryUrls, metrics, now: opts.now });
  const { ministries, confirmLimits } = ministryParts;
  const qrConfig = await loadQrConfig();
  const partnerRepo = createPartnerRepository(db, opts.now);
  const invoiceRepo = createInvoiceRepository(db, opts.now);
  const paymentRepo = createPaymentRepository(db, opts.now);
  const reportRepo = createReportRepository(db);
  const idempotencyRepo = createIdempotencyRepository(db);
  const localInvoiceCache = createInvoiceCache(config.invoiceCache);
  // Instances that share Redis (for rate limits) also share invoice-cache invalidations.
  const invoiceCacheBus = config.redisUrl ? await withInvoiceCacheBus(localInvoiceCache, config.redisUrl, logger) : null;
  const invoiceCache = invoiceCacheBus ?? localInvoiceCache;
  // Every write that changes invoice rows goes through these, so no cached read outlives it.
  const invoiceStore = invalidatingInvoices(invoiceRepo, invoiceCache);
  const paymentStore = invalidatingPayments(paymentRepo, invoiceCache);
  const events = createEventRepository({ now: opts.now, firstAttemptDelayMs: config.webhookRetryScheduleMs[0] });
  const cancellationRepo = createMinistryCancellationRepository(db);
  const checkSchedule = confirmationCheckSchedule(config.confirmPollMs, config.confirmBackoffMaxMs);
  const finishPartnerCancel = createPartnerCancelFinisher({ payments: paymentStore, cancellations: cancellationRepo, now: opts.now });
  const ministryCancellation = createMinistryCancellationService({ cancellations: cancellationRepo, ministries, schedule: checkSchedule, finishPartnerCancel, onStaleLease, log: logger, now: opts.now });
  const submitter = createPaymentSubmitter({
    payments: paymentStore,
    invoices: invoiceStore,
    events,
    ministries,
    cancellations: cancellationRepo,
    ministryCancellation,
    log: logger,
    now: opts.now,
  });
  const resolver = createPaymentResolver({
    payments: paymentStore,
    invoices: invoiceStore,
    events,
    ministries,
    submitter,
    expiryMs: config.paymentExpiryMs,
    now: opts.now,
    onConfirmed: (source, lagMs) => metrics.confirmationLag.observe({ source }, Math.max(lagMs, 0) / 1000),
  });
  // One QR service: the landing page rebuilds the very QR and links POST /payments answered with.
  const qr = createQrService({ banks: qrConfig.banks, schemes: qrConfig.schemes, shortUrlBase: config.shortUrlBase });
  const payments = createPaymentService({
    payments: paymentStore,
    invoices: invoiceStore,
    idempotency: idempotencyRepo,
    ministries,
    submitter,
    resolver,
    cancels: createPaymentCancelService({
      payments: paymentStore,
      invoices: invoiceStore,
      cancellations: cancellationRepo,
      attempt: (row) => ministryCancellation.attempt(row),
      graceMs: Math.max(2 * config.ministryTimeoutMs, 5000),
      now: opts.now,
    }),
    qr,
    log: logger,
    ministryTimeoutMs: config.ministryTimeoutMs,
    idempotencyTtlMs: config.idempotencyTtlMs,
    now: opts.now,
  });
  const rateLimiters = await createRateLimitersFromConfig(config, {
    log: logger,
    clock: opts.rateLimitClock ?? epochMs(opts.now),
    keyNamespace: opts.rateLimitNamespace,
    counters: { rejections: metrics.rateLimitRejections, storeErrors: metrics.rateLimitStoreErrors },
  });
  // An `api` process runs no background work: its queued deliveries wait for a worker's next poll.
  const nudgeWebhooks = () => {
    if (config.processRole !== 'api') webhookJob.nudge();
  };
  const cipher = createSecretCipher(config.webhookSecretKey);
  const deliveryRepo = createWebhookDeliveryRepository(db);
  const webhookHttp = createWebhookHttpClient({ timeoutMs: config.webhookTimeoutMs, allowPrivate: config.webhookAllowPrivate });
  const webhookRepo = createWebhookRepository(db);
  const webhooks = createWebhookService({
    webhooks: webhookRepo,
    deliveries: deliveryRepo,
    deliveryLog: createDeliveryLogRepository(db),
    cipher,
    guard: createTargetGuard(webhookTargetPolicy(config.appEnv, config.webhookAllowPrivate)),
    maxPerPartner: config.webhookMaxPerPartner,
    secretRotationGraceMs: config.webhookSecretRotationGraceMs,
    onQueued: nudgeWebhooks,
    now: opts.now,
  });
  const deliveryService = createWebhookDeliveryService({
    deliveries: deliveryRepo,
    cipher,
    http: webhookHttp,
    retryScheduleMs: config.webhookRetryScheduleMs,
    log: logger,
    onResult: (outcome) => metrics.webhookDeliveries.inc({ outcome }),
    onStaleLease,
    now: opts.now,
  });
  const devices = createDeviceService({ devices: createDeviceRepository(db), now: opts.now });
  const pushRepo = createPushDeliveryRepository(db);
  const pushService = createPushDeliveryService({
    pushes: pushRepo,
    sender: createPushSender(config.fcm, logger, config.webhookTimeoutMs),
    retryScheduleMs: config.webhookRetryScheduleMs,
    log: logger,
    onStaleLease,
    now: opts.now,
  });
  const services: AppServices = {
    partners: createPartnerService({ partners: partnerRepo, appEnv: config.appEnv, keyRotationGraceMs: config.keyRotationGraceMs, authCacheTtlMs: config.authCacheTtlMs, now: opts.now }),
    invoices: createInvoiceService({ invoices: readThroughInvoices(invoiceRepo, invoiceCache), ministries, log: logger, now: opts.now }),
    payments,
    reports: createReportService({ reports: reportRepo, payments: paymentRepo, ministries, log: logger, now: opts.now }),
    webhooks,
    events: createEventService({ events: createEventLogRepository(db) }),
    devices,
    rateLimiter: rateLimiters.perKey,
    authFailureLimiter: rateLimiters.authFailures,
    shortLinkLimiter: rateLimiters.shortLinks,
    shortLinks: createShortLinkService({ links: createShortLinkRepository(db), qr }),
  };
  if (sandboxEnabled(config.appEnv)) {
    services.sandbox = createSandboxService({
      payments: paymentStore,
      invoices: invoiceStore,
      simulator: createSimulatorControlClient({ baseUrl: opts.ministryUrls.mof, timeoutMs: config.ministryTimeoutMs }),
    });
  }
  const reconciliationRepo = createReconciliationRepository(db);
  const auditRepo = createAuditRepository(db);
  metrics.observe({
    paymentsByStatus: () => reportRepo.paymentsByStatus(),
    outboxBacklog: () => deliveryRepo.countPending(),
    openDiscrepancies: () => reconciliationRepo.openByKind(),
    lastReconciliation: () => reconciliationRepo.lastCompleted(),
    confirmationBacklog: () => reportRepo.unresolvedBySource(),
    disabledWebhooks: () => webhookRepo.countDisabled(),
  });
  const webhookJob = createWebhookDeliveryJob({
    deliveries: deliveryRepo,
    service: deliveryService,
    intervalMs: config.webhookPollMs,
    timeoutMs: config.webhookTimeoutMs,
    concurrency: config.webhookConcurrency,
    slowConcurrency: config.webhookSlowConcurrency,
    log: logger,
    outage: dbOutage,
    background: priority?.background,
    now: opts.now,
  });
  const reconciliation = createReconciliationService({
    reconciliations: reconciliationRepo,
    ministries,
    resolver,
    audit: auditRepo,
    settings: { scheduleAtMinutes: clockTimeMinutes(config.reconciliation.at), retryMs: config.reconciliation.retryMs, leaseMs: config.reconciliation.leaseMs, waitMs: config.reconciliation.waitMs },
    log: logger,
    now: opts.now,
    onConfirmed: nudgeWebhooks,
    onStaleLease,
  });
  const backOffice = createBackOfficeService({
    payments: createPaymentSearchRepository(db),
    deliveries: deliveryRepo,
    reconciliations: reconciliationRepo,
    audit: auditRepo,
    now: opts.now,
    onRedeliver: nudgeWebhooks,
  });
  const admin: AdminServices = { partners: createPartnerAdminService({ partners: services.partners, backOffice }), backOffice, reconciliation };
  const jobs: Job[] = [
    createPaymentConfirmationJob({
      payments: paymentStore,
      cancellations: cancellationRepo,
      resolver,
      ministryCancellation,
      schedule: checkSchedule,
      limits: confirmLimits,
      maxPerSource: config.confirmConcurrencyMaxPerSource,
      onLimit: (source, limit) => metrics.ministryConcurrencyLimit.set({ source }, limit),
      leaseMs: confirmationLeaseMs(config.ministryTimeoutMs, config.confirmPollMs),
      log: logger,
      outage: dbOutage,
      onStaleLease,
      now: opts.now,
      onResolved: () => webhookJob.nudge(),
    }),
    webhookJob,
    createWebhookHealthJob({ webhooks: webhookRepo, disableAfterMs: config.webhookDisableAfterMs, intervalMs: config.webhookHealthCheckMs, log: logger, now: opts.now }),
    createRetentionSweepJob({ idempotency: idempotencyRepo, retention: createRetentionRepository(db), settings: config.retention, log: logger, now: opts.now }),
    createCounterRollupJob({ counters: createCounterRepository(db), settings: config.counterRollup, log: logger }),
    createReconciliationJob({ service: reconciliation, intervalMs: config.reconciliation.pollMs }),
    createPushDeliveryJob({
      pushes: pushRepo,
      service: pushService,
      intervalMs: config.webhookPollMs,
      timeoutMs: config.webhookTimeoutMs,
      limits: { total: config.webhookConcurrency.total, perPartner: config.webhookConcurrency.perPartner },
      log: logger,
      outage: dbOutage,
      now: opts.now,
    }),
  ];
  const running = new Set<RunningJobs>();
  // Jobs first: a pass in flight still uses the database and the clients closed after them.
  const stopJobs = async () => {
    await Promise.allSettled([...running].map((r) => r.stop()));
  };
  return {
    config,
    logger,
    db,
    ministries,
    metrics,
    services,
    admin,
    isDbReady,
    dbOutage,
    jobs,
    startJobs() {
      const started = startJobs(jobs, logger, { outage: dbOutage, ping: isDbReady }, priority);
      running.add(started);
      return started;
    },
    requestActivity: priority,
    close: createShutdown(stopJobs, [ministryParts.close, () => rateLimiters.close(), async () => invoiceCacheBus?.close(), () => webhookHttp.close(), data.close]),
  };
}
