import Fastify, { type FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyBaseLogger } from 'fastify';
import { frameworkErrors, registerErrorHandling } from './http/plugins/errors.plugin.js';
import { clientErrorHandler } from './http/client-error.handler.js';
import { genReqId, registerRequestId } from './http/plugins/request-id.plugin.js';
import { createValidatorCompiler } from './http/validation.js';
import { adminRoutes } from './http/routes/admin.routes.js';
import type { PartnerService } from './services/partner.service.js';
import type { Metrics } from './services/metrics.js';

export interface AdminAppOptions {
  logger: FastifyBaseLogger;
  adminToken: string;
  partners: PartnerService;
  metrics?: Metrics;
}

/** The operator listener: partner management and metrics, bound to loopback by the entry point. */
export async function buildAdminApp(opts: AdminAppOptions): Promise<FastifyInstance> {
  const app = Fastify({
    loggerInstance: opts.logger,
    genReqId,
    bodyLimit: 16 * 1024,
    frameworkErrors,
    clientErrorHandler,
  }).withTypeProvider<TypeBoxTypeProvider>();
  app.setValidatorCompiler(createValidatorCompiler());
  registerRequestId(app);
  registerErrorHandling(app);
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
