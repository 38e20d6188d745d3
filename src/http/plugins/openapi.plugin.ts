import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance, FastifySchema } from 'fastify';
import { componentSchemas, withComponentRefs } from '../openapi/components.js';
import { describeOperations, HEADER_COMPONENTS, type OpenApiObject } from '../openapi/operations.js';
import { WEBHOOK_COMPONENTS, webhooksSection } from '../openapi/webhooks.js';
import { hashOf, pageHeaders } from './page-security.plugin.js';

const DESCRIPTION = `Government invoice lookup and payment channel for banks, fintechs and super-apps.

Every path except the health checks requires the \`X-API-Key\` header. \`POST /payments\` accepts an
optional \`X-Idempotency-Key\` header: a repeat with the same key returns the first response with
\`message: "idempotent"\` and \`Idempotent-Replayed: true\`. Errors use
\`{ statusCode, message, error, code, requestId }\`: \`code\` is one of a closed list (docs/errors.md: when to retry,
what to tell the customer), \`requestId\` the answer's \`X-Request-Id\`; on 400, \`message\` is an array and
\`errors\` a list of \`{ path, message }\` (\`path\` a JSON pointer such as \`/amount\`), one entry per violation.
A refused payment (422) is \`{ success: false, refNum, message, code, requestId }\`.
Rate limits: 5 requests per second, 60 per minute and 1000 per hour per key, and 60 failed
authentications per minute per client address (429 with \`Retry-After\`). Every response carries \`X-Request-Id\` (yours, when you send a safe one).
A path parameter longer than 200 characters is refused with 414 before routing.

Events are pushed to the partner's webhooks: see \`webhooks\` for the deliveries, their headers and
how to verify their signature.`;

/**
 * The one inline style Swagger UI's page has: the `<style>` of the SVG logo its standalone preset
 * renders into the top bar (before the plugin's initializer swaps that logo for an `<img>`). An
 * upgrade that changes it shows as a violation in test/browser/page-policy.browser.test.ts.
 */
const SWAGGER_UI_LOGO_STYLE = '.logo_small_svg__cls-2{fill:#fff}.logo_small_svg__cls-3{fill:#85ea2d}';

/**
 * The API reference page's policy: what Swagger UI's page needs, all of it from this origin. Its
 * markup is the plugin's, whose script files carry no integrity attribute to pin them by, so they
 * are allowed as 'self'; its one inline style is allowed by hash.
 */
export const API_REFERENCE_CSP = [
  "default-src 'none'",
  // swagger-ui-bundle.js, its standalone preset and the plugin's initializer, all under /docs/static.
  "script-src 'self'",
  `style-src 'self' ${hashOf(SWAGGER_UI_LOGO_STYLE)}`,
  // The favicons; the logo (the initializer's data: SVG) and the stylesheet's icons are data: URIs.
  "img-src 'self' data:",
  // The document (/docs/json), and "Try it out" against this origin: a key typed into the Authorize dialog goes nowhere else.
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

export interface OpenApiServer {
  url: string;
  description: string;
}

/** The servers of the document: this instance as run locally, and the public sandbox and production. */
export function openApiServers(config: { host: string; port: number; publicApiUrls: { sandbox: string; production: string } }, prefix: string): OpenApiServer[] {
  const host = config.host === '0.0.0.0' || config.host === '::' ? '127.0.0.1' : config.host.includes(':') ? `[${config.host}]` : config.host;
  return [
    { url: `http://${host}:${config.port}${prefix}`, description: 'Local (this service as run by `npm start`)' },
    { url: config.publicApiUrls.sandbox, description: 'Sandbox (sandbox keys, simulated ministries)' },
    { url: config.publicApiUrls.production, description: 'Production (production keys)' },
  ];
}

/**
 * Must be registered before the routes so every route schema lands in the document. Its paths are
 * relative to the servers, which all end in `prefix` (the routes are served under it).
 */
export async function registerOpenApi(app: FastifyInstance, prefix: string, servers: OpenApiServer[] = [{ url: prefix, description: 'This server' }]): Promise<void> {
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: { title: 'Government payment channel API', version: '1.0.0', description: DESCRIPTION },
      servers,
      components: {
        securitySchemes: { ApiKey: { type: 'apiKey', in: 'header', name: 'X-API-Key', description: "The partner's API key (`gpk_sandbox_…` or `gpk_live_…`)." } },
        // Plain JSON Schemas; the plugin's OpenAPI 3.0-flavoured typing does not describe 3.1's.
        schemas: { ...componentSchemas(), ...WEBHOOK_COMPONENTS } as Record<string, object> as Record<string, never>,
      },
      security: [{ ApiKey: [] }],
      tags: [
        { name: 'Invoices' },
        { name: 'Payments' },
        { name: 'Reports' },
        { name: 'Webhooks' },
        { name: 'Events', description: 'What happened to your payments, kept for EVENT_RETENTION_MS (90 days by default): catch up after an outage' },
        { name: 'Cases', description: 'Something went wrong with one of your payments, as your customer tells it: raise it, follow it, get the answer (also as the opt-in case.* events)' },
        { name: 'Devices' },
        { name: 'Sandbox', description: 'Only in the local and sandbox environments' },
        { name: 'Health' },
      ],
    },
    stripBasePath: false,
    // The document only: named schemas become $refs to their components, paths lose the prefix.
    transform: ({ schema, url }) => {
      const path = url.startsWith(`${prefix}/`) ? url.slice(prefix.length) : url;
      if (!schema) return { schema, url: path };
      const { body, response, ...rest } = schema as FastifySchema & { response?: Record<string, unknown> };
      const documented: Record<string, unknown> = { ...rest };
      if (body) documented.body = withComponentRefs(body);
      if (response) documented.response = Object.fromEntries(Object.entries(response).map(([code, s]) => [code, withComponentRefs(s)]));
      return { schema: documented as FastifySchema, url: path };
    },
    transformObject: (documentObject) => {
      const doc = (documentObject as { openapiObject: OpenApiObject }).openapiObject;
      describeOperations(doc);
      doc.components = { ...doc.components, headers: HEADER_COMPONENTS };
      return { ...doc, webhooks: webhooksSection() } as never;
    },
  });
  const docs = `${prefix}/docs`;
  const page = { ...pageHeaders(API_REFERENCE_CSP), 'cross-origin-resource-policy': 'same-origin' };
  // Its scripts and stylesheets are the same public bytes for everyone, and the bundle alone is over
  // a megabyte: they keep the static server's revalidated caching rather than no-store.
  const { 'cache-control': _noStore, ...asset } = page;
  // In a context of its own, so the hook covers every route Swagger UI adds (its uiHooks skip the static files).
  await app.register(async (reference) => {
    reference.addHook('onSend', async (request, reply, payload) => {
      reply.headers(request.url.startsWith(`${docs}/static/`) ? asset : page);
      return payload;
    });
    await reference.register(swaggerUi, { routePrefix: docs, uiConfig: { docExpansion: 'list', deepLinking: true } });
  });
  app.get(`${prefix}/openapi.json`, { schema: { hide: true } }, async () => app.swagger());
}
