import { Type } from 'typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { BadRequestBody, ErrorBody, IdParams } from '../../schemas/common.schema.js';
import { CreatePartnerBody, CreatedPartnerBody, PartnerBody, RotatedKeyBody, UpdatePartnerBody } from '../../schemas/admin.schema.js';
import type { Partner, PartnerService } from '../../services/partner.service.js';
import { registerAdminAuth } from '../plugins/admin-auth.plugin.js';

function partnerView(p: Partner) {
  return { ...p, createdAt: p.createdAt.toISOString() };
}

const errors = { 400: BadRequestBody, 401: ErrorBody, 404: ErrorBody };

export const adminRoutes: FastifyPluginAsyncTypebox<{ partners: PartnerService; adminToken: string }> = async (app, opts) => {
  registerAdminAuth(app, opts.adminToken);

  app.post(
    '/admin/partners',
    { schema: { body: CreatePartnerBody, response: { 201: CreatedPartnerBody, ...errors } } },
    async (request, reply) => {
      const created = await opts.partners.create(request.body);
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
    async (request) => partnerView(await opts.partners.update(request.params.id, request.body)),
  );

  app.post(
    '/admin/partners/:id/keys',
    { schema: { params: IdParams, response: { 201: RotatedKeyBody, ...errors } } },
    async (request, reply) => {
      const rotated = await opts.partners.rotateKey(request.params.id);
      reply.code(201);
      return { apiKey: rotated.apiKey, previousKeysExpireAt: rotated.previousKeysExpireAt.toISOString() };
    },
  );
};
