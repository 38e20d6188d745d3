import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import { createFastify } from './http/fastify-instance.js';
import { adminRoutes } from './http/routes/admin.routes.js';
import type { PartnerService } from './services/partner.service.js';
import type { Metrics } from './adapters/metrics.js';

export interface AdminAppOptions {
  logger: FastifyBaseLogger;
  adminToken: string;
  partners: PartnerService;
  metrics?: Metrics;
}

/** The operator listener: partner management and metrics, bound to loopback by the entry point. */
export async function buildAdminApp(opts: AdminAppOptions): Promise<FastifyInstance> {
  const app = createFastify(opts.logger, { bodyLimit: 16 * 1024 });
  await app.register(adminRoutes, { partners: opts.partners, adminToken: opts.adminToken });
  const metrics = opts.metrics;
  if (metrics) {
    // Scraped from loopback only (the admin listener), so no token is asked for.
    app.get('/metrics', async (_request, reply) => {
      reply.type(metrics.registry.contentType);
      return metrics.registry.metrics();
    });
  }
  return app;
}
