import { readFileSync } from 'node:fs';
import type { FastifyPluginAsync } from 'fastify';
import { loopbackCallersOnly } from '../plugins/admin-access.plugin.js';

/** Read once at start-up: one self-contained page (inline CSS and JS, nothing from other hosts). */
const PAGE_HTML = readFileSync(new URL('../console/console.page.html', import.meta.url), 'utf8');

/**
 * The operator console, on the admin listener (whose Host rule applies to it like to every path).
 * The page itself holds no data and asks for the operator's token, which it sends to the admin
 * API; it is still served to loopback callers only (see loopbackCallersOnly).
 */
export const consoleRoutes: FastifyPluginAsync = async (app) => {
  app.get('/', { schema: { hide: true }, onRequest: loopbackCallersOnly }, async (_request, reply) => {
    return reply
      .type('text/html; charset=utf-8')
      .header('cache-control', 'no-store')
      .header('x-frame-options', 'DENY')
      .header('referrer-policy', 'no-referrer')
      .header('content-security-policy', "default-src 'self'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src 'self' data:; connect-src 'self'")
      .send(PAGE_HTML);
  });
};
