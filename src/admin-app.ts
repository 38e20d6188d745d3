import Fastify, { type FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyBaseLogger } from 'fastify';
import { registerErrorHandling } from './http/plugins/errors.plugin.js';
import { genReqId, registerRequestId } from './http/plugins/request-id.plugin.js';
import { createValidatorCompiler } from './http/validation.js';
import { adminRoutes } from './http/routes/admin.routes.js';
import type { PartnerService } from './services/partner.service.js';

export interface AdminAppOptions {
  logger: FastifyBaseLogger;
  adminToken: string;
  partners: PartnerService;
}

/** The operator listener: partner management and metrics, bound to loopback by the entry point. */
export async function buildAdminApp(opts: AdminAppOptions): Promise<FastifyInstance> {
  const app = Fastify({ loggerInstance: opts.logger, genReqId, bodyLimit: 16 * 1024 }).withTypeProvider<TypeBoxTypeProvider>();
  app.setValidatorCompiler(createValidatorCompiler());
  registerRequestId(app);
  registerErrorHandling(app);
  await app.register(adminRoutes, { partners: opts.partners, adminToken: opts.adminToken });
  return app;
}
