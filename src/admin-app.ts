import type { CaseService } from './services/case.service.js';
import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import { createFastify, type ListenerLimits } from './http/fastify-instance.js';
import type { SchemaCompilers } from './http/schema-compilers.js';
import { adminRoutes } from './http/routes/admin.routes.js';
import { consoleRoutes } from './http/routes/console.routes.js';
import type { Operator } from './http/plugins/admin-auth.plugin.js';
import { registerAdminHostCheck } from './http/plugins/admin-access.plugin.js';
import { registerMetricsRoute } from './http/plugins/metrics.plugin.js';
import type { PartnerAdminService } from './services/partner-admin.service.js';
import type { BackOfficeService } from './services/back-office.service.js';
import type { ReconciliationService } from './services/reconciliation.service.js';
import type { Metrics } from './adapters/metrics.js';
import type { RateLimitService } from './services/rate-limit/rate-limit.service.js';

export interface AdminServices {
  partners: PartnerAdminService;
  backOffice: BackOfficeService;
  reconciliation: ReconciliationService;
  /** Partners' cases, the operator's queue of them. */
  cases: CaseService;
  /** Wrong operator tokens per client address, counted apart from the partner API's failed authentications. */
  authFailureLimiter: RateLimitService;
}

export interface AdminAppOptions {
  logger: FastifyBaseLogger;
  operators: readonly Operator[];
  /** Host names answered besides the listener's own address (ADMIN_ALLOWED_HOSTS). */
  allowedHosts: readonly string[];
  services: AdminServices;
  metrics?: Metrics;
  /** As the partner API's (AppOptions.listenerLimits). */
  listenerLimits?: ListenerLimits;
  /** As the partner API's (AppOptions.schemaCompilers). */
  schemaCompilers?: SchemaCompilers;
}

/** The operator listener: the console, partner management, the back office and metrics; bound to loopback by the entry point. */
export async function buildAdminApp(opts: AdminAppOptions): Promise<FastifyInstance> {
  const app = createFastify(opts.logger, { bodyLimit: 16 * 1024, limits: opts.listenerLimits }, opts.schemaCompilers);
  registerAdminHostCheck(app, opts.allowedHosts);
  await app.register(consoleRoutes);
  await app.register(adminRoutes, { operators: opts.operators, ...opts.services });
  if (opts.metrics) registerMetricsRoute(app, opts.metrics);
  return app;
}
