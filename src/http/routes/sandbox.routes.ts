import { Type } from 'typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { ErrorBody, Uuid, bodyErrors, commonErrors } from '../../schemas/common.schema.js';
import { InvoiceBody } from '../../schemas/invoice.schema.js';
import { CreateSandboxInvoiceBody, ScenarioListBody } from '../../schemas/sandbox.schema.js';
import type { SandboxService } from '../../services/sandbox.service.js';
import { pageScript } from '../page-script.bundler.js';
import { loadPageTemplate, scriptValues, sendPage, sendPageScript } from '../plugins/page-security.plugin.js';

/** Read once at start-up: the markup and styles; the script is bundled from sandbox/sandbox.page.ts. */
const PAGE = loadPageTemplate(new URL('../sandbox/sandbox.page.html', import.meta.url));

/** The sandbox page itself and its script; registered outside the authenticated scope (the key is typed into the page). */
export const sandboxPageRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const scriptPath = `${app.prefix}/sandbox/sandbox.js`;
  app.get('/sandbox', { schema: { hide: true } }, async (_request, reply) => {
    return sendPage(reply, 200, PAGE, scriptValues(scriptPath, await pageScript('sandbox')));
  });
  app.get('/sandbox/sandbox.js', { schema: { hide: true } }, async (_request, reply) => sendPageScript(reply, await pageScript('sandbox')));
};

export const ApproveBody = Type.Object({ paymentId: Uuid }, { additionalProperties: false });
export const ApprovedBody = Type.Object({ id: Uuid, approved: Type.Literal(true) });

/** Sandbox-only helpers behind the API key; registered inside the authenticated, rate-limited scope. */
export const sandboxApiRoutes: FastifyPluginAsyncTypebox<{ sandbox: SandboxService }> = async (app, opts) => {
  app.post(
    '/sandbox/approve',
    {
      schema: {
        tags: ['Sandbox'],
        summary: 'Sandbox only: make the simulated ministry approve a submitted payment',
        description:
          'Available only in the local and sandbox environments (absent in production). Approves this ' +
          "partner's own `submitted` payment in the simulated ministry system; the payment becomes " +
          '`confirmed` on the next `GET /payments/{id}`. 409 when the payment is not `submitted`.',
        body: ApproveBody,
        response: { 200: ApprovedBody, 404: ErrorBody, 409: ErrorBody, ...commonErrors, ...bodyErrors },
      },
    },
    async (request) => opts.sandbox.approve(request.partner.id, request.body.paymentId),
  );

  app.get(
    '/sandbox/scenarios',
    {
      schema: {
        tags: ['Sandbox'],
        summary: 'Sandbox only: the scenarios POST /sandbox/invoices can plant',
        description: 'Available only in the local and sandbox environments (absent in production).',
        response: { 200: ScenarioListBody, ...commonErrors },
      },
    },
    async () => opts.sandbox.scenarios(),
  );

  app.post(
    '/sandbox/invoices',
    {
      schema: {
        tags: ['Sandbox'],
        summary: 'Sandbox only: plant an invoice at the simulated ministry that behaves as the scenario says',
        description:
          'Available only in the local and sandbox environments (absent in production). The invoice (`open`, or `paid` ' +
          'for `already-paid`; due in 30 days; a payer register of its own) is this partner\'s alone: `GET /invoices/{id}`, ' +
          '`/refresh` and `GET /invoices?ttd=<its payer register>` return it to this partner, to every other partner the first ' +
          'two answer 404 and searches never list it. `linked` plants two invoices and answers the first. From then on it is ' +
          'an ordinary invoice: pay it with `POST /payments`. See `GET /sandbox/scenarios`.',
        body: CreateSandboxInvoiceBody,
        response: { 201: InvoiceBody, ...commonErrors, ...bodyErrors },
      },
    },
    async (request, reply) => reply.code(201).send(await opts.sandbox.createInvoice(request.partner.id, request.body)),
  );
};
