import type { FastifyInstance } from 'fastify';
import { UnauthenticatedError } from '../../domain/errors.js';
import type { AuthenticatedPartner, PartnerService } from '../../services/partner.service.js';
import type { RateLimitService } from '../../services/rate-limit/rate-limit.service.js';
import { clientKeyOf, refusalOf, sendRefusal } from './rate-limit.plugin.js';

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
  app.addHook('onRequest', async (request, reply) => {
    const client = clientKeyOf(request);
    const refusal = refusalOf(await failures.peek(client));
    if (refusal) return sendRefusal(reply, refusal, 'Too many failed authentications from this address');
    const header = request.headers['x-api-key'];
    try {
      request.partner = await partners.authenticate(typeof header === 'string' ? header : undefined);
    } catch (err) {
      if (err instanceof UnauthenticatedError) await failures.record(client);
      throw err;
    }
  });
}
