import type { FastifyInstance } from 'fastify';
import type { AuthenticatedPartner, PartnerService } from '../../services/partner.service.js';
import type { RateLimitService } from '../../services/rate-limit/rate-limit.service.js';
import { authenticateWithinFailureLimit } from './rate-limit.plugin.js';

declare module 'fastify' {
  interface FastifyRequest {
    partner: AuthenticatedPartner;
  }
}

/**
 * Registers the X-API-Key check on every route of the encapsulating scope. A client address with
 * AUTH_FAILURES_PER_MINUTE failed authentications in the last minute is refused before its key
 * is looked up: made-up keys, each a cache miss, would otherwise cost a database read apiece.
 */
export function registerAuth(app: FastifyInstance, partners: PartnerService, failures: RateLimitService): void {
  app.decorateRequest('partner', null as unknown as AuthenticatedPartner);
  app.addHook(
    'onRequest',
    authenticateWithinFailureLimit(failures, async (request) => {
      const header = request.headers['x-api-key'];
      request.partner = await partners.authenticate(typeof header === 'string' ? header : undefined);
    }),
  );
}
