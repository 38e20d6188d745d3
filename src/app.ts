import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import { createFastify, type ListenerLimits } from './http/fastify-instance.js';
import type { SchemaCompilers } from './http/schema-compilers.js';
import { registerAuth } from './http/plugins/auth.plugin.js';
import { requestSpanLoggerFactory } from './http/request-logger.js';
import { registerTracing } from './http/plugins/tracing.plugin.js';
import { createLocalTracer } from './adapters/tracing/local.tracer.js';
import type { Tracer } from './domain/tracer.port.js';
import { registerOpenApi, type OpenApiServer } from './http/plugins/openapi.plugin.js';
import { healthRoutes } from './http/routes/health.routes.js';
import { invoiceRoutes } from './http/routes/invoices.routes.js';
import { paymentRoutes } from './http/routes/payments.routes.js';
import { reportRoutes } from './http/routes/reports.routes.js';
import { webhookRoutes } from './http/routes/webhooks.routes.js';
import { eventRoutes } from './http/routes/events.routes.js';
import { deviceRoutes } from './http/routes/devices.routes.js';
import { caseRoutes } from './http/routes/cases.routes.js';
import type { CaseService } from './services/case.service.js';
import { sandboxApiRoutes, sandboxPageRoutes } from './http/routes/sandbox.routes.js';
import { shortLinkRoutes } from './http/routes/short-link.routes.js';
import type { PartnerService } from './services/partner.service.js';
import type { InvoiceService } from './services/invoice.service.js';
import type { PaymentService } from './payments/payments.module.js';
import type { ReportService } from './services/report.service.js';
import type { RateLimitService } from './services/rate-limit/rate-limit.service.js';
import type { WebhookService } from './services/webhook.service.js';
import type { EventService } from './services/event.service.js';
import type { DeviceService } from './services/device.service.js';
import type { ShortLinkService } from './services/short-link.service.js';
import type { SandboxService } from './services/sandbox.service.js';
import type { Metrics } from './adapters/metrics.js';
import { registerHttpMetrics } from './http/plugins/metrics.plugin.js';
import { registerRequestActivity, type RequestActivity } from './http/plugins/request-activity.plugin.js';

/** The services the partner API serves, one per area (composition/deps.factory.ts builds them). */
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
  /** The partner's cases about its payments (POST /cases). */
  cases: CaseService;
  /** The public QR landing page behind `qrpay.shortUrl` (`GET /q/{paymentId}`). */
  shortLinks: ShortLinkService;
  /** Sandbox-only helpers (the sandbox page's simulator approve); absent in production. */
  sandbox?: SandboxService;
}

export interface AppOptions {
  logger: FastifyBaseLogger;
  bodyLimitBytes: number;
  /** The request deadline and connection bound of the listener (listenerLimitsOf(config)); left out only by apps that never listen. */
  listenerLimits?: ListenerLimits;
  services: AppServices;
  isDbReady: () => Promise<boolean>;
  /** Background loops that have stalled, for readiness's body. */
  stalledWork?: () => string[];
  /** True once the process is shutting down: readiness answers 503 (HealthOptions.isDraining). */
  isDraining?: () => boolean;
  metrics?: Metrics;
  /** The OpenAPI document's servers (openApiServers(config)); by default this server's API_PREFIX. */
  openApiServers?: OpenApiServer[];
  /** The proxies whose X-Forwarded-For names the client (TRUST_PROXY), for the per-address limits. */
  trustProxy?: string | null;
  /** Counts the requests being served (on the embedded database, which serves them first). */
  requestActivity?: RequestActivity;
  /** The tracer the services use (deps.tracer), so a request's span is the parent of what it calls; a local one when left out. */
  tracer?: Tracer;
  /**
   * Compile the routes' schemas (createSchemaCompilers); fresh ones when left out. Shared by the
   * apps of a process, they compile each schema once: the test suite builds hundreds of apps.
   */
  schemaCompilers?: SchemaCompilers;
}

export const API_PREFIX = '/api/v1';

/** Builds the partner API; never listens, so tests drive it with inject(). */
export async function buildApp(opts: AppOptions): Promise<FastifyInstance> {
  const tracer = opts.tracer ?? createLocalTracer();
  const app = createFastify(
    opts.logger,
    {
      childLoggerFactory: requestSpanLoggerFactory(tracer),
      bodyLimit: opts.bodyLimitBytes,
      limits: opts.listenerLimits,
      routerOptions: { ignoreTrailingSlash: true, maxParamLength: 200 },
      ...(opts.trustProxy ? { trustProxy: opts.trustProxy } : {}),
    },
    opts.schemaCompilers,
  );
  registerTracing(app, tracer);
  if (opts.requestActivity) registerRequestActivity(app, opts.requestActivity);
  if (opts.metrics) registerHttpMetrics(app, opts.metrics);
  await registerOpenApi(app, API_PREFIX, opts.openApiServers);
  // The QR landing page (qrpay.shortUrl): at the root like QPay's short link, no key, read-only.
  await app.register(shortLinkRoutes, { prefix: '/q', shortLinks: opts.services.shortLinks, limiter: opts.services.shortLinkLimiter });

  await app.register(
    async (api) => {
      await api.register(healthRoutes, { isDbReady: opts.isDbReady, stalledWork: opts.stalledWork, isDraining: opts.isDraining });
      // Sandbox page (no key; the key is typed into it): only when the sandbox service exists (never in production).
      if (opts.services.sandbox) await api.register(sandboxPageRoutes);
      await api.register(async (secured) => {
        registerAuth(secured, opts.services.partners, opts.services.authFailureLimiter, opts.services.rateLimiter);
        await secured.register(invoiceRoutes, { invoices: opts.services.invoices });
        await secured.register(paymentRoutes, { payments: opts.services.payments, reports: opts.services.reports });
        await secured.register(reportRoutes, { reports: opts.services.reports });
        await secured.register(webhookRoutes, { webhooks: opts.services.webhooks });
        await secured.register(eventRoutes, { events: opts.services.events });
        await secured.register(deviceRoutes, { devices: opts.services.devices });
        await secured.register(caseRoutes, { cases: opts.services.cases });
        if (opts.services.sandbox) await secured.register(sandboxApiRoutes, { sandbox: opts.services.sandbox });
      });
    },
    { prefix: API_PREFIX },
  );
  return app;
}
