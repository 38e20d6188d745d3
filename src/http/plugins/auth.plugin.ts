import type { FastifyInstance } from 'fastify';
import type { AuthenticatedPartner, PartnerService } from '../../services/partner.service.js';
import type { RateLimitService } from '../../services/rate-limit/rate-limit.service.js';
import { applyKeyLimit, authenticateWithinFailureLimit, clientKeyOf, partnerPolicies, refusalOf, sendRefusal, TOO_MANY_FAILURES } from './rate-limit.plugin.js';

declare module 'fastify' {
  interface FastifyRequest {
    partner: AuthenticatedPartner;
  }
}

/**
 * The X-API-Key check and the per-key limits (with the partner's own limits when it has them) on
 * every route of the encapsulating scope, as an onRequest hook: a refused request is answered
 * before body parsing, validation and any business logic, so retrying it is always safe.
 *
 * A client address with AUTH_FAILURES_PER_MINUTE failed authentications in the last minute is
 * refused before its key is looked up (made-up keys, each a cache miss, would otherwise cost a
 * database read apiece), good keys too. A key whose check is fresh in the cache costs no lookup,
 * so its address's failures are read in the same step as its key's limit is counted: one round
 * trip to a shared Redis instead of two, with the same answer.
 */
export function registerAuth(app: FastifyInstance, partners: PartnerService, failures: RateLimitService, perKey: RateLimitService): void {
  app.decorateRequest('partner', null as unknown as AuthenticatedPartner);
  const policyOf = partnerPolicies(perKey.windows);
  const authenticate = authenticateWithinFailureLimit(failures, async (request) => {
    const header = request.headers['x-api-key'];
    request.partner = await partners.authenticate(typeof header === 'string' ? header : undefined);
  });
  app.addHook('onRequest', async (request, reply) => {
    const header = request.headers['x-api-key'];
    const cached = partners.authenticateCached(typeof header === 'string' ? header : undefined);
    if (cached) {
      const policy = policyOf(cached.rateLimits);
      const { guard, check } = await perKey.checkGuarded(failures, clientKeyOf(request), cached.keyId, policy.windows);
      const refusal = refusalOf(guard);
      if (refusal) return sendRefusal(reply, refusal, TOO_MANY_FAILURES);
      request.partner = cached;
      return check ? applyKeyLimit(reply, policy, check) : undefined;
    }
    const refused = await authenticate(request, reply);
    if (refused) return refused;
    const policy = policyOf(request.partner.rateLimits);
    return applyKeyLimit(reply, policy, await perKey.check(request.partner.keyId, policy.windows));
  });
}
