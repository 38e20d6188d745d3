import type { FastifyInstance } from 'fastify';
import type { AuthenticatedPartner, PartnerService } from '../../services/partner.service.js';

declare module 'fastify' {
  interface FastifyRequest {
    partner: AuthenticatedPartner;
  }
}

/** Registers the X-API-Key check on every route of the encapsulating scope. */
export function registerAuth(app: FastifyInstance, partners: PartnerService): void {
  app.decorateRequest('partner', null as unknown as AuthenticatedPartner);
  app.addHook('onRequest', async (request) => {
    const header = request.headers['x-api-key'];
    request.partner = await partners.authenticate(typeof header === 'string' ? header : undefined);
  });
}
