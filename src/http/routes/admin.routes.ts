import { Type } from 'typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { BadRequestBody, ErrorBody, IdParams } from '../../schemas/common.schema.js';
import { CreatePartnerBody, CreatedPartnerBody, PartnerBody, RotatedKeyBody, UpdatePartnerBody } from '../../schemas/admin.schema.js';
import type { Partner } from '../../services/partner.service.js';
import type { PartnerAdminService } from '../../services/partner-admin.service.js';
import type { RateLimitService } from '../../services/rate-limit/rate-limit.service.js';
import { registerAdminAuth, type Operator } from '../plugins/admin-auth.plugin.js';
import { backOfficeRoutes, type BackOfficeRouteOptions } from './back-office.routes.js';
import { adminCaseRoutes } from './admin-cases.routes.js';
import type { CaseService } from '../../services/case.service.js';

function partnerView(p: Partner) {
  return { ...p, createdAt: p.createdAt.toISOString() };
}

const errors = { 400: BadRequestBody, 401: ErrorBody, 404: ErrorBody };

export interface AdminRouteOptions extends BackOfficeRouteOptions {
  cases: CaseService;
  partners: PartnerAdminService;
  operators: readonly Operator[];
  /** Wrong operator tokens per client address (AUTH_FAILURES_PER_MINUTE). */
  authFailureLimiter: RateLimitService;
}

export const adminRoutes: FastifyPluginAsyncTypebox<AdminRouteOptions> = async (app, opts) => {
  registerAdminAuth(app, opts.operators, opts.authFailureLimiter);

  app.post(
    '/admin/partners',
    { schema: { body: CreatePartnerBody, response: { 201: CreatedPartnerBody, ...errors } } },
    async (request, reply) => {
      const created = await opts.partners.create(request.body, request.operator);
      reply.code(201);
      return { id: created.id, name: created.name, qrStandard: created.qrStandard, environment: created.environment, active: created.active, apiKey: created.apiKey };
    },
  );

  app.get('/admin/partners', { schema: { response: { 200: Type.Array(PartnerBody), ...errors } } }, async () =>
    (await opts.partners.list()).map(partnerView),
  );

  app.patch(
    '/admin/partners/:id',
    { schema: { params: IdParams, body: UpdatePartnerBody, response: { 200: PartnerBody, ...errors } } },
    async (request) => partnerView(await opts.partners.update(request.params.id, request.body, request.operator)),
  );

  app.post(
    '/admin/partners/:id/keys',
    { schema: { params: IdParams, response: { 201: RotatedKeyBody, ...errors } } },
    async (request, reply) => {
      const rotated = await opts.partners.rotateKey(request.params.id, request.operator);
      reply.code(201);
      return { apiKey: rotated.apiKey, previousKeysExpireAt: rotated.previousKeysExpireAt.toISOString() };
    },
  );

  await app.register(backOfficeRoutes, { backOffice: opts.backOffice, reconciliation: opts.reconciliation });
  await app.register(adminCaseRoutes, { cases: opts.cases });
};
