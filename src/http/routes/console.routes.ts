import { readFileSync } from 'node:fs';
import type { FastifyPluginAsync } from 'fastify';
import { ForbiddenError } from '../../domain/errors.js';

/** Read once at start-up: one self-contained page (inline CSS and JS, nothing from other hosts). */
const PAGE_HTML = readFileSync(new URL('../console/console.page.html', import.meta.url), 'utf8');

const LOOPBACK = new Set(['127.0.0.1', '::1', '::ffff:127.0.0.1']);

/**
 * The operator console, on the admin listener. The page itself holds no data and asks for the
 * operator's token, which it sends to the admin API; it is still served to loopback callers only,
 * so an admin listener bound wider by mistake does not hand the console to the network.
 */
export const consoleRoutes: FastifyPluginAsync = async (app) => {
  app.get('/', { schema: { hide: true } }, async (request, reply) => {
    if (!LOOPBACK.has(request.socket.remoteAddress ?? '')) throw new ForbiddenError('The operator console answers loopback callers only');
    return reply
      .type('text/html; charset=utf-8')
      .header('cache-control', 'no-store')
      .header('x-frame-options', 'DENY')
      .header('referrer-policy', 'no-referrer')
      .header('content-security-policy', "default-src 'self'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src 'self' data:; connect-src 'self'")
      .send(PAGE_HTML);
  });
};
