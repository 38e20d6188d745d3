import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { UnauthenticatedError } from '../../domain/errors.js';

const digest = (s: string) => createHash('sha256').update(s).digest();

/** Registers the operator's Bearer token check on every route of the encapsulating scope. */
export function registerAdminAuth(app: FastifyInstance, adminToken: string): void {
  // Digests of equal length, so the comparison takes the same time whatever was sent.
  const expected = digest(`Bearer ${adminToken}`);
  app.addHook('onRequest', async (request) => {
    const given = digest(request.headers.authorization ?? '');
    if (!timingSafeEqual(given, expected)) throw new UnauthenticatedError('Invalid or missing admin token');
  });
}
