import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import { createFastify, type ListenerLimits } from './http/fastify-instance.js';
import { registerAdminHostCheck } from './http/plugins/admin-access.plugin.js';
import { healthRoutes } from './http/routes/health.routes.js';
import { registerMetricsRoute } from './http/plugins/metrics.plugin.js';
import type { Metrics } from './adapters/metrics.js';

export interface WorkerAppOptions {
  logger: FastifyBaseLogger;
  /** Host names answered besides the listener's own address (ADMIN_ALLOWED_HOSTS). */
  allowedHosts: readonly string[];
  isDbReady: () => Promise<boolean>;
  /** Background loops that have stalled, for readiness's body. */
  stalledWork?: () => string[];
  /** True once the process is shutting down: readiness answers 503 (HealthOptions.isDraining). */
  isDraining?: () => boolean;
  metrics: Metrics;
  /** As the partner API's (AppOptions.listenerLimits). */
  listenerLimits?: ListenerLimits;
}

/**
 * A worker's only listener, on the admin address: what an orchestrator and Prometheus need from a
 * process that serves no partner or operator: `/health/live`, `/health/ready` and `/metrics`.
 */
export async function buildWorkerApp(opts: WorkerAppOptions): Promise<FastifyInstance> {
  const app = createFastify(opts.logger, { bodyLimit: 1024, limits: opts.listenerLimits });
  registerAdminHostCheck(app, opts.allowedHosts);
  await app.register(healthRoutes, { isDbReady: opts.isDbReady, stalledWork: opts.stalledWork, isDraining: opts.isDraining });
  registerMetricsRoute(app, opts.metrics);
  return app;
}
