import { Validator } from '@seriousme/openapi-schema-validator';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestContext, type TestContext } from '../helpers/test-context.js';
import { createContractChecker, documentPath, type ContractDocument } from '../helpers/contract.js';
import { PartnerBody, UpdatePartnerBody } from '../../src/schemas/admin.schema.js';
import { ERROR_CODES } from '../../src/domain/errors.js';
import { codesOfStatus } from '../../src/http/plugins/errors.plugin.js';
import { partnerWithPayment } from '../helpers/api.js';

let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext();
});
afterAll(() => ctx.close());

interface Media {
  schema: unknown;
  example?: unknown;
  examples?: Record<string, { value: unknown }>;
}
interface Operation {
  parameters?: { name: string; in: string }[];
  security?: unknown[];
  requestBody?: { content: Record<string, Media> };
  responses: Record<string, { description: string; headers?: Record<string, { $ref?: string }>; content?: Record<string, Media> }>;
}
interface OpenApiDoc extends ContractDocument {
  openapi: string;
  servers: { url: string; description?: string }[];
  paths: Record<string, Record<string, Operation>>;
  webhooks: Record<string, { post: Operation & { description: string } }>;
  components: { securitySchemes: Record<string, { name?: string }>; schemas: Record<string, unknown>; headers: Record<string, { required?: boolean }> };
}

async function fetchDoc(): Promise<OpenApiDoc> {
  const res = await ctx.app.inject({ method: 'GET', url: '/api/v1/openapi.json' });
  expect(res.statusCode).toBe(200);
  return res.json<OpenApiDoc>();
}

/** Partner routes as Fastify knows them (from its printed radix tree), in OpenAPI path syntax. */
function registeredRoutes(): string[] {
  const out: string[] = [];
  const stack: string[] = [];
  for (const line of ctx.app.printRoutes({ commonPrefix: false }).split('\n')) {
    const start = line.search(/[^\s│├└─]/);
    const match = /^(\S+) \(([A-Z, ]+)\)$/.exec(line.slice(start));
    if (start < 0 || !match) continue;
    const depth = Math.floor(start / 4);
    stack.length = depth;
    const path = stack.join('') + (match[1] as string);
    stack.push(match[1] as string);
    // HTML pages (the docs and the sandbox page, with its script) are not API operations.
    if (!path.startsWith('/api/v1/') || path.includes('/docs') || path.endsWith('openapi.json') || path === '/api/v1/sandbox' || path === '/api/v1/sandbox/sandbox.js') continue;
    for (const method of (match[2] as string).split(', ')) {
      if (method !== 'HEAD') out.push(`${method.toLowerCase()} ${documentPath(path)}`);
    }
  }
  return out;
}

describe('OpenAPI document', () => {
  it('is a valid OpenAPI 3.1 document', async () => {
    const doc = await fetchDoc();
    expect(doc.openapi).toBe('3.1.0');
    const result = await new Validator().validate(doc as unknown as Parameters<Validator['validate']>[0]);
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
  });

  it('covers every partner route, the auth header and the idempotency header', async () => {
    const doc = await fetchDoc();
    const documented = Object.entries(doc.paths).flatMap(([path, ops]) => Object.keys(ops).map((m) => `${m} ${path}`));
    const routes = registeredRoutes();
    expect(routes.length).toBeGreaterThan(10);
    for (const route of routes) expect(documented).toContain(route);
    expect(doc.components.securitySchemes.ApiKey?.name).toBe('X-API-Key');
    const post = doc.paths['/payments']?.post;
    expect(post?.parameters?.some((p) => p.name === 'x-idempotency-key' && p.in === 'header')).toBe(true);
    expect(Object.keys(post?.responses ?? {}).sort()).toEqual(['201', '400', '401', '403', '404', '409', '413', '415', '422', '429', '500', '503']);
  });

  it('has paths relative to its servers: local from HOST/PORT, sandbox and production from config', async () => {
    const doc = await fetchDoc();
    expect(doc.servers.map((s) => s.url)).toEqual([
      `http://${ctx.config.host}:${ctx.config.port}/api/v1`,
      ctx.config.publicApiUrls.sandbox,
      ctx.config.publicApiUrls.production,
    ]);
    expect(doc.servers.every((s) => s.url.endsWith('/api/v1') && s.description)).toBe(true);
    expect(Object.keys(doc.paths).every((p) => !p.startsWith('/api/'))).toBe(true);

    const custom = await createTestContext({
      config: { port: 8123, publicApiUrls: { sandbox: 'https://sb.pay.gov.test/api/v1', production: 'https://pay.gov.test/api/v1' } },
    });
    try {
      const res = await custom.app.inject({ method: 'GET', url: '/api/v1/openapi.json' });
      expect(res.json<OpenApiDoc>().servers.map((s) => s.url)).toEqual([
        `http://${custom.config.host}:8123/api/v1`,
        'https://sb.pay.gov.test/api/v1',
        'https://pay.gov.test/api/v1',
      ]);
    } finally {
      await custom.close();
    }
  });

  it('names its schemas: every request and response body is a $ref to a component', async () => {
    const doc = await fetchDoc();
    for (const [path, ops] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(ops)) {
        const bodies = [op.requestBody?.content['application/json'], ...Object.values(op.responses).map((r) => r.content?.['application/json'])];
        for (const media of bodies.filter((m) => m !== undefined)) {
          const refs = JSON.stringify(media.schema).match(/#\/components\/schemas\/\w+/g) ?? [];
          expect(refs.length, `${method} ${path}`).toBeGreaterThan(0);
        }
      }
    }
    expect(Object.keys(doc.components.schemas)).toEqual(
      expect.arrayContaining(['Error', 'ValidationError', 'Invoice', 'InvoiceList', 'PaymentCreated', 'PaymentFailed', 'Payment', 'QrPay', 'Webhook', 'Device']),
    );
    expect(Object.keys(doc.components.schemas).every((name) => /^[A-Z][A-Za-z]+$/.test(name))).toBe(true);
  });

  it("names the codes of every error response: an enum of the closed list, each response its status's", async () => {
    const doc = await fetchDoc();
    const schemas = doc.components.schemas as Record<string, { properties?: { code?: { enum?: string[] } } }>;
    expect(schemas.Error?.properties?.code?.enum).toEqual([...ERROR_CODES]);
    /** The codes a response's schema allows: a component's enum, narrowed by an allOf's, or the union of anyOf branches. */
    const codesOf = (schema: unknown): string[] => {
      const s = schema as { $ref?: string; allOf?: unknown[]; anyOf?: unknown[]; properties?: { code?: { enum?: string[] } } };
      if (s.anyOf) return s.anyOf.flatMap(codesOf);
      if (s.allOf) return s.properties?.code?.enum ?? s.allOf.flatMap(codesOf);
      if (s.$ref) return schemas[s.$ref.replace('#/components/schemas/', '')]?.properties?.code?.enum ?? [];
      return s.properties?.code?.enum ?? [];
    };
    let responses = 0;
    for (const [path, ops] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(ops)) {
        for (const [status, response] of Object.entries(op.responses)) {
          if (Number(status) < 400) continue;
          const codes = codesOf(response.content?.['application/json']?.schema);
          const where = `${method} ${path} ${status}`;
          expect(codes.length, where).toBeGreaterThan(0);
          for (const code of codes) expect(codesOfStatus(Number(status)), where).toContain(code);
          responses += 1;
        }
      }
    }
    expect(responses).toBeGreaterThan(50);
  });

  it('describes every response, with its headers and examples that match its schema', async () => {
    const doc = await fetchDoc();
    const checker = createContractChecker(doc);
    const checkExamples = (where: string, media: Media) => {
      const values = media.examples ? Object.values(media.examples).map((e) => e.value) : [media.example];
      expect(values.filter((v) => v !== undefined).length, `${where}: no example`).toBeGreaterThan(0);
      const validate = checker.validator(media.schema);
      for (const value of values) expect(validate(value), `${where}: ${JSON.stringify(validate.errors)}`).toBe(true);
    };
    for (const [path, ops] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(ops)) {
        const where = `${method} ${path}`;
        const secured = !(Array.isArray(op.security) && op.security.length === 0);
        if (op.requestBody) checkExamples(`${where} request`, op.requestBody.content['application/json'] as Media);
        for (const [status, response] of Object.entries(op.responses)) {
          expect(response.description, `${where} ${status}`).not.toMatch(/^(Default Response)?$/);
          checkExamples(`${where} ${status}`, response.content?.['application/json'] as Media);
          expect(response.headers?.['X-Request-Id'], `${where} ${status}`).toBeDefined();
          if (secured && status !== '401') expect(Object.keys(response.headers ?? {}), `${where} ${status}`).toEqual(expect.arrayContaining(['RateLimit', 'RateLimit-Policy']));
          if (status === '429') expect(response.headers?.['Retry-After'], where).toBeDefined();
        }
        if (secured) expect(Object.keys(op.responses), where).toEqual(expect.arrayContaining(['400', '401', '403', '429', '500', '503']));
        if (op.requestBody) expect(Object.keys(op.responses), where).toEqual(expect.arrayContaining(['413', '415']));
      }
    }
    const created = doc.paths['/payments']?.post?.responses['201'];
    expect(created?.headers?.['Idempotent-Replayed']).toEqual({ $ref: '#/components/headers/IdempotentReplayed' });
    expect(created?.content?.['application/json']?.examples?.created?.value).toMatchObject({ status: 'submitted' });
    expect(doc.paths['/payments/{id}']?.get?.responses['200']?.headers?.['X-Status-Source']).toEqual({ $ref: '#/components/headers/XStatusSource' });
    expect(Object.keys(doc.components.headers).sort()).toEqual(['IdempotentReplayed', 'RateLimit', 'RateLimitPolicy', 'RetryAfter', 'XRequestId', 'XStatusSource']);
  });

  it('describes the cases with named schemas, and the 409 of a second open case with the open one\'s id', async () => {
    const doc = await fetchDoc();
    const checker = createContractChecker(doc);
    const schemaOf = (path: string, method: string, status?: string) => {
      const op = doc.paths[path]?.[method];
      const media = status ? op?.responses[status]?.content?.['application/json'] : op?.requestBody?.content['application/json'];
      return media?.schema;
    };
    const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
    expect(schemaOf('/cases', 'post')).toEqual(ref('OpenCaseRequest'));
    expect(schemaOf('/cases', 'post', '201')).toEqual(ref('Case'));
    expect(schemaOf('/cases', 'get', '200')).toEqual(ref('CaseList'));
    expect(schemaOf('/cases/{id}', 'get', '200')).toEqual(ref('CaseDetail'));
    expect(schemaOf('/cases/{id}/comments', 'post')).toEqual(ref('CaseCommentRequest'));
    expect(schemaOf('/cases/{id}/comments', 'post', '201')).toEqual(ref('CaseDetail'));
    expect(Object.keys(doc.paths['/cases']?.post?.responses ?? {}).sort()).toEqual(['201', '400', '401', '403', '404', '409', '413', '415', '429', '500', '503']);
    expect(Object.keys(doc.paths['/cases/{id}/comments']?.post?.responses ?? {})).toEqual(expect.arrayContaining(['201', '404', '409']));

    const conflict = schemaOf('/cases', 'post', '409');
    expect(conflict).toEqual({ allOf: [ref('CaseConflict')], properties: { code: { type: 'string', enum: codesOfStatus(409) } } });
    expect(codesOfStatus(409)).toContain('case_already_open');
    const validate = checker.validator(conflict);
    const example = doc.paths['/cases']?.post?.responses['409']?.content?.['application/json']?.examples?.default?.value as { code: string; caseId: string };
    expect(example).toMatchObject({ code: 'case_already_open', caseId: expect.any(String) });
    const { caseId: _caseId, ...withoutCaseId } = example;
    expect(validate(withoutCaseId)).toBe(false);
    expect(validate({ ...example, code: 'not_found' })).toBe(false);

    // The real answers: ctx.api checks each against the document, so a drift fails here too.
    const { partner, payment } = await partnerWithPayment(ctx, 'mof');
    const open = (description: string) => ctx.api(partner.apiKey, { method: 'POST', url: '/api/v1/cases', payload: { paymentId: payment.id, type: 'paid_twice', description } });
    const first = await open('Charged twice for one invoice');
    expect(first.statusCode).toBe(201);
    const again = await open('Charged twice, again');
    expect(again.statusCode).toBe(409);
    expect(validate(again.json())).toBe(true);
    expect(again.json()).toMatchObject({ code: 'case_already_open', caseId: first.json<{ id: string }>().id });
  });

  it("states that the rate-limit policy header carries the partner's own limits", async () => {
    const doc = await fetchDoc();
    expect(doc.components.headers.RateLimitPolicy).toMatchObject({ description: expect.stringContaining("the partner's own limits") });
  });

  it('types the admin partner schemas with rateLimits: three positive integers, or null for the defaults', () => {
    const limits = { type: ['object', 'null'], required: ['perSecond', 'perMinute', 'perHour'], additionalProperties: false };
    const member = { type: 'integer', minimum: 1 };
    for (const schema of [UpdatePartnerBody, PartnerBody]) {
      const field = schema.properties.rateLimits as unknown as { properties: Record<string, unknown> };
      expect(field).toMatchObject(limits);
      expect(field.properties).toMatchObject({ perSecond: member, perMinute: member, perHour: member });
    }
    expect(PartnerBody.required).toContain('rateLimits');
    expect(UpdatePartnerBody.required ?? []).not.toContain('rateLimits');
  });

  it('describes the webhook deliveries: each event, its headers and the signature', async () => {
    const doc = await fetchDoc();
    const checker = createContractChecker(doc);
    expect(Object.keys(doc.webhooks).sort()).toEqual([
      'case.opened',
      'case.resolved',
      'case.updated',
      'payment.canceled',
      'payment.confirmed',
      'payment.failed',
      'payment.submitted',
      'webhook.test',
    ]);
    for (const [event, { post }] of Object.entries(doc.webhooks)) {
      const names = (post.parameters ?? []).filter((p) => p.in === 'header').map((p) => p.name);
      expect(names).toEqual(expect.arrayContaining(['X-Service-Event', 'X-Service-Delivery', 'X-Service-Timestamp', 'X-Service-Signature']));
      expect(post.description).toMatch(/HMAC-SHA256/);
      const media = post.requestBody?.content['application/json'] as Media;
      const example = Object.values(media.examples ?? {})[0]?.value as { event: string };
      expect(example.event).toBe(event);
      expect(checker.validator(media.schema)(example)).toBe(true);
    }
  });

  it('serves a browsable reference page without a key', async () => {
    const res = await ctx.app.inject({ method: 'GET', url: '/api/v1/docs/' });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toContain('text/html');
  });
});

describe('metrics', () => {
  // Its own service: the counts below are exact, so no other test's requests may be in them.
  let own: TestContext;
  beforeAll(async () => {
    own = await createTestContext();
  });
  afterAll(() => own.close());

  it('exposes request, upstream and payment metrics on the admin listener', async () => {
    const p = await own.partner();
    await own.api(p.apiKey, { method: 'GET', url: '/api/v1/invoices?ttd=7000001' });
    await own.api(p.apiKey, { method: 'GET', url: '/api/v1/invoices/00000000-0000-4000-8000-000000000000' });
    await own.api(p.apiKey, { method: 'GET', url: '/api/v1/no-such-route' });
    const res = await own.admin.inject({ method: 'GET', url: '/metrics' });
    expect(res.statusCode).toBe(200);
    expect(res.body).toMatch(/http_requests_total\{method="GET",route="\/api\/v1\/invoices",status="200"\} 1/);
    expect(res.body).toMatch(/http_requests_total\{method="GET",route="\/api\/v1\/invoices\/:id",status="404"\} 1/);
    expect(res.body).toMatch(/http_requests_total\{method="GET",route="unmatched",status="404"\} 1/);
    expect(res.body).toMatch(/ministry_call_duration_seconds_count\{source="etax",operation="search",outcome="ok"\} 1/);
    expect(res.body).toContain('payments_by_status');
    expect(res.body).toContain('http_request_duration_seconds_bucket');
  });
});
