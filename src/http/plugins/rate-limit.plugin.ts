import type { FastifyInstance } from 'fastify';
import type { RateLimitDecision, RateLimitWindow } from '../../services/rate-limit/rate-limiter.js';
import type { RateLimitService } from '../../services/rate-limit/rate-limit.service.js';
import { errorBody } from './errors.plugin.js';

const toSeconds = (ms: number) => Math.ceil(ms / 1000);

/** IETF draft-ietf-httpapi-ratelimit-headers: one quota policy per window, e.g. `"per-second";q=5;w=1`. */
export function formatPolicyHeader(windows: readonly RateLimitWindow[]): string {
  return windows.map((w) => `"${w.name}";q=${w.limit};w=${toSeconds(w.windowMs)}`).join(', ');
}

/** Remaining quota `r` and seconds `t` until the window next frees a unit, per policy. */
export function formatRateLimitHeader(decision: RateLimitDecision): string {
  return decision.windows.map((w) => `"${w.name}";r=${w.remaining};t=${toSeconds(w.resetMs)}`).join(', ');
}

export function retryAfterSeconds(decision: RateLimitDecision): number {
  return Math.max(1, toSeconds(decision.retryAfterMs));
}

/**
 * Per-API-key limits on every route of the scope. Registered after auth (hooks run in registration
 * order) so the key is known, and as an onRequest hook so a refused request is answered before body
 * parsing, validation and any business logic: retrying it is always safe.
 */
export function registerRateLimit(app: FastifyInstance, limiter: RateLimitService): void {
  const policy = formatPolicyHeader(limiter.windows);
  app.addHook('onRequest', async (request, reply) => {
    const outcome = await limiter.check(request.partner.keyId);
    if (outcome.kind === 'bypassed') return;
    if (outcome.kind === 'unavailable') {
      return reply.code(503).header('retry-after', '1').send(errorBody(503, 'Service temporarily unavailable'));
    }
    const { decision } = outcome;
    reply.header('ratelimit-policy', policy).header('ratelimit', formatRateLimitHeader(decision));
    if (decision.allowed) return;
    return reply
      .code(429)
      .header('retry-after', String(retryAfterSeconds(decision)))
      .send(errorBody(429, 'Too Many Requests'));
  });
}
