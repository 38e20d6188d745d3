import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance } from 'fastify';

const DESCRIPTION = `Government invoice lookup and payment channel for banks, fintechs and super-apps.

Every path except the health checks requires the \`X-API-Key\` header. \`POST /payments\` accepts an
optional \`X-Idempotency-Key\` header: a repeat with the same key returns the first response with
\`message: "idempotent"\` and \`Idempotent-Replayed: true\`. Errors use
\`{ statusCode, message, error }\`; on 400, \`message\` is an array with one entry per violation.
Rate limits: 5 requests per second, 60 per minute and 1000 per hour per key (429 with
\`Retry-After\`).`;

/** Must be registered before the routes so every route schema lands in the document. */
export async function registerOpenApi(app: FastifyInstance, prefix: string): Promise<void> {
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: { title: 'Government payment channel API', version: '1.0.0', description: DESCRIPTION },
      servers: [{ url: '/' }],
      components: {
        securitySchemes: { ApiKey: { type: 'apiKey', in: 'header', name: 'X-API-Key' } },
      },
      security: [{ ApiKey: [] }],
      tags: [
        { name: 'Invoices' },
        { name: 'Payments' },
        { name: 'Reports' },
        { name: 'Webhooks' },
        { name: 'Devices' },
        { name: 'Health' },
      ],
    },
  });
  await app.register(swaggerUi, { routePrefix: `${prefix}/docs`, uiConfig: { docExpansion: 'list', deepLinking: true } });
  app.get(`${prefix}/openapi.json`, { schema: { hide: true } }, async () => app.swagger());
}
