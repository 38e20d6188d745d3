import { Validator } from '@seriousme/openapi-schema-validator';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestContext, type TestContext } from '../helpers/test-context.js';

let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext();
});
afterAll(() => ctx.close());

interface OpenApiDoc {
  openapi: string;
  paths: Record<string, Record<string, { parameters?: { name: string; in: string }[]; responses: Record<string, unknown> }>>;
  components: { securitySchemes: Record<string, { name?: string }> };
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
    // HTML pages (the docs and the sandbox page) are not API operations.
    if (!path.startsWith('/api/v1/') || path.includes('/docs') || path.endsWith('openapi.json') || path === '/api/v1/sandbox') continue;
    for (const method of (match[2] as string).split(', ')) {
      if (method !== 'HEAD') out.push(`${method.toLowerCase()} ${path.replace(/:(\w+)/g, '{$1}')}`);
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
    const post = doc.paths['/api/v1/payments']?.post;
    expect(post?.parameters?.some((p) => p.name === 'x-idempotency-key' && p.in === 'header')).toBe(true);
    expect(Object.keys(post?.responses ?? {})).toEqual(expect.arrayContaining(['201', '400', '401', '422', '429']));
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
