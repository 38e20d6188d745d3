import type { FastifyPluginAsync } from 'fastify';
import { loopbackCallersOnly } from '../plugins/admin-access.plugin.js';
import { pageScript } from '../page-script.bundler.js';
import { loadPageTemplate, scriptValues, sendPage, sendPageScript } from '../plugins/page-security.plugin.js';

/** Read once at start-up: the markup and styles; the script is bundled from console/console.page.ts. */
const PAGE = loadPageTemplate(new URL('../console/console.page.html', import.meta.url));
const SCRIPT_PATH = '/console.js';

/**
 * The operator console, on the admin listener (whose Host rule applies to it like to every path).
 * The page itself holds no data and asks for the operator's token, which it sends to the admin
 * API; it is still served to loopback callers only (see loopbackCallersOnly), its script too.
 */
export const consoleRoutes: FastifyPluginAsync = async (app) => {
  app.get('/', { schema: { hide: true }, onRequest: loopbackCallersOnly }, async (_request, reply) => {
    return sendPage(reply, 200, PAGE, scriptValues(SCRIPT_PATH, await pageScript('console')));
  });
  app.get(SCRIPT_PATH, { schema: { hide: true }, onRequest: loopbackCallersOnly }, async (_request, reply) => sendPageScript(reply, await pageScript('console')));
};
