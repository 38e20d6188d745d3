import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { UnauthenticatedError } from '../../domain/errors.js';
import type { RateLimitService } from '../../services/rate-limit/rate-limit.service.js';
import { authenticateWithinFailureLimit } from './rate-limit.plugin.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The operator the admin token names; the audit log records actions under it. */
    operator: string;
  }
}

export interface Operator {
  name: string;
  token: string;
}

const digest = (s: string) => createHash('sha256').update(s).digest();

/**
 * Registers the operator's Bearer token check on every route of the encapsulating scope. Named
 * tokens may be as short as 8 characters, so a client address with AUTH_FAILURES_PER_MINUTE
 * wrong tokens in the last minute is refused as the partner API refuses one (counted apart from
 * the partner API's failures): guessing gets that many answers a minute, not as many as it sends.
 */
export function registerAdminAuth(app: FastifyInstance, operators: readonly Operator[], failures: RateLimitService): void {
  // Digests of equal length, compared with every operator's, so the time taken says nothing of
  // which token (if any) matched.
  const expected = operators.map((o) => ({ name: o.name, hash: digest(`Bearer ${o.token}`) }));
  app.decorateRequest('operator', '');
  app.addHook(
    'onRequest',
    authenticateWithinFailureLimit(failures, async (request) => {
      const given = digest(request.headers.authorization ?? '');
      let found: string | null = null;
      for (const o of expected) if (timingSafeEqual(given, o.hash) && found === null) found = o.name;
      if (found === null) throw new UnauthenticatedError('Invalid or missing admin token');
      request.operator = found;
    }),
  );
}

/** ADMIN_TOKEN is operator `admin`; ADMIN_TOKENS names the others. */
export function operatorsOf(config: { adminToken: string; adminTokens: readonly Operator[] }): Operator[] {
  return [{ name: 'admin', token: config.adminToken }, ...config.adminTokens];
}
