import fc from 'fast-check';
import type { InjectOptions, LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestContext, type TestContext } from '../helpers/test-context.js';

let ctx: TestContext;
let key: string;
let invoiceId: string;

beforeAll(async () => {
  ctx = await createTestContext();
  key = (await ctx.partner()).apiKey;
  invoiceId = (await ctx.api(key, { method: 'GET', url: '/api/v1/invoices/ref/MOF-T-1' })).json<{ id: string }>().id;
});
afterAll(() => ctx.close());

const RUNS = 60;

/** Never a 5xx; a 400 always has the documented shape; any other error has the common shape. */
function expectWellFormed(res: LightMyRequestResponse): void {
  expect(res.statusCode, res.body).toBeLessThan(500);
  if (res.statusCode === 400) {
    const body = res.json<{ statusCode: number; message: unknown; error: string }>();
    expect(body.statusCode).toBe(400);
    expect(body.error).toBe('Bad Request');
    expect(Array.isArray(body.message)).toBe(true);
    expect((body.message as unknown[]).every((m) => typeof m === 'string')).toBe(true);
  } else if (res.statusCode >= 401 && res.statusCode !== 422) {
    expect(res.json()).toMatchObject({ statusCode: res.statusCode, message: expect.any(String) });
  }
}

const weirdString = fc.oneof(
  fc.string({ maxLength: 50 }),
  fc.string({ unit: 'grapheme', maxLength: 30 }),
  fc.constantFrom('', ' ', '\u0000', '../../etc/passwd', "' OR 1=1 --", '%00', '<script>', 'NaN', '1e309', '😀'.repeat(40), 'Ё'.repeat(300)),
  fc.string({ minLength: 1000, maxLength: 5000 }),
);
const anyJson = fc.jsonValue({ maxDepth: 6 });
const deep = fc.integer({ min: 1, max: 400 }).map((n) => JSON.parse('['.repeat(n) + ']'.repeat(n)) as unknown);

/** A valid payment body, then mutated: a field replaced, dropped, or an extra one added. */
const paymentBody = fc.oneof(
  fc.record({ invoiceId: fc.oneof(fc.constant('__VALID__'), fc.uuid(), weirdString, anyJson), amount: fc.option(fc.oneof(fc.double(), fc.integer(), weirdString, anyJson), { nil: undefined }) }, { requiredKeys: [] }),
  fc.dictionary(weirdString, anyJson, { maxKeys: 5 }),
  anyJson,
  deep,
);

function withValidId(body: unknown): unknown {
  if (body && typeof body === 'object' && !Array.isArray(body) && (body as Record<string, unknown>).invoiceId === '__VALID__') {
    return { ...(body as object), invoiceId };
  }
  return body;
}

describe('hostile input never causes a 5xx', () => {
  it('POST /payments bodies', async () => {
    await fc.assert(
      fc.asyncProperty(paymentBody, async (body) => {
        const res = await ctx.api(key, { method: 'POST', url: '/api/v1/payments', payload: JSON.stringify(withValidId(body)), headers: { 'content-type': 'application/json' } });
        expectWellFormed(res);
        if (res.statusCode === 201) await ctx.api(key, { method: 'DELETE', url: `/api/v1/payments/${res.json<{ id: string }>().id}` });
      }),
      { numRuns: RUNS },
    );
  });

  it('raw bodies that are not JSON at all', async () => {
    await fc.assert(
      fc.asyncProperty(fc.oneof(weirdString, fc.uint8Array({ maxLength: 200 }).map((b) => Buffer.from(b).toString('latin1'))), async (raw) => {
        const res = await ctx.api(key, { method: 'POST', url: '/api/v1/payments/report', payload: raw, headers: { 'content-type': 'application/json' } });
        expectWellFormed(res);
      }),
      { numRuns: RUNS },
    );
  });

  it('settlement report bodies', async () => {
    await fc.assert(
      fc.asyncProperty(fc.oneof(fc.record({ financeDay: fc.oneof(weirdString, anyJson, fc.date({ noInvalidDate: true }).map((d) => d.toISOString().slice(0, 10))) }), anyJson), async (body) => {
        const res = await ctx.api(key, { method: 'POST', url: '/api/v1/payments/report', payload: JSON.stringify(body), headers: { 'content-type': 'application/json' } });
        expectWellFormed(res);
      }),
      { numRuns: RUNS },
    );
  });

  it('query strings on GET /invoices and GET /reports/payments', async () => {
    const param = fc.tuple(fc.constantFrom('ttd', 'vehicle', 'taxRef', 'page', 'limit', 'x', '__proto__', 'constructor'), weirdString);
    await fc.assert(
      fc.asyncProperty(fc.array(param, { maxLength: 4 }), fc.constantFrom('/api/v1/invoices', '/api/v1/reports/payments'), async (params, path) => {
        const qs = params.map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`).join('&');
        const res = await ctx.api(key, { method: 'GET', url: `${path}?${qs}` });
        expectWellFormed(res);
      }),
      { numRuns: RUNS },
    );
  });

  it('path parameters', async () => {
    const paths = ['/api/v1/invoices/', '/api/v1/invoices/ref/', '/api/v1/payments/'];
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...paths), weirdString, fc.constantFrom('GET', 'DELETE'), async (prefix, segment, method) => {
        const res = await ctx.api(key, { method: method as 'GET' | 'DELETE', url: prefix + encodeURIComponent(segment) });
        expectWellFormed(res);
      }),
      { numRuns: RUNS },
    );
  });

  it('headers: API keys and idempotency keys', async () => {
    const printable = fc.string({ unit: fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c)), maxLength: 400 });
    await fc.assert(
      fc.asyncProperty(printable, printable, async (apiKey, idem) => {
        const res = await ctx.app.inject({
          method: 'POST',
          url: '/api/v1/payments',
          payload: { invoiceId },
          headers: { 'x-api-key': apiKey, 'x-idempotency-key': idem },
        });
        expectWellFormed(res);
        const withKey = await ctx.api(key, { method: 'GET', url: `/api/v1/invoices/${invoiceId}`, headers: { 'x-idempotency-key': idem, 'x-request-id': apiKey } });
        expectWellFormed(withKey);
      }),
      { numRuns: RUNS },
    );
  });
});

/**
 * PostgreSQL's text cannot hold U+0000, and a lone surrogate has no UTF-8 form. A URL or a header
 * cannot carry a lone surrogate (they are bytes, not UTF-16), so those parts are tried with NUL only.
 */
describe('text PostgreSQL cannot store is a 400 on every endpoint', () => {
  const BODY_BAD = ['\u0000', 'a\u0000b', '\ud800', 'x\udfff', '\udbff\udbff', '\udc00\ud800'];
  const URL_BAD = ['%00', 'a%00b'];
  const WEBHOOK = { url: 'https://hooks.example.com/gov', secret: 's'.repeat(16), events: ['payment.confirmed'] };
  const DEVICE = { userId: 'user-1', fcmToken: 'token-1', platform: 'ios' };
  const UUID = '00000000-0000-4000-8000-000000000000';

  interface Case {
    name: string;
    admin?: boolean;
    /** The field each message names. */
    field: string;
    bad: string[];
    request(bad: string): InjectOptions;
  }

  const cases: Case[] = [
    ...(['ttd', 'vehicle', 'taxRef'] as const).map((f) => ({ name: `GET /invoices ?${f}`, field: f, bad: URL_BAD, request: (b: string) => ({ method: 'GET' as const, url: `/api/v1/invoices?${f}=${b}` }) })),
    { name: 'GET /invoices/ref/{refNum}', field: 'refNum', bad: URL_BAD, request: (b) => ({ method: 'GET', url: `/api/v1/invoices/ref/${b}` }) },
    { name: 'GET /invoices/{id}', field: 'id', bad: URL_BAD, request: (b) => ({ method: 'GET', url: `/api/v1/invoices/${b}` }) },
    { name: 'GET /invoices/{id}/refresh', field: 'id', bad: URL_BAD, request: (b) => ({ method: 'GET', url: `/api/v1/invoices/${b}/refresh` }) },
    { name: 'GET /payments/{id}', field: 'id', bad: URL_BAD, request: (b) => ({ method: 'GET', url: `/api/v1/payments/${b}` }) },
    { name: 'DELETE /payments/{id}', field: 'id', bad: URL_BAD, request: (b) => ({ method: 'DELETE', url: `/api/v1/payments/${b}` }) },
    { name: 'DELETE /webhooks/{id}', field: 'id', bad: URL_BAD, request: (b) => ({ method: 'DELETE', url: `/api/v1/webhooks/${b}` }) },
    { name: 'GET /webhooks/{id}/deliveries', field: 'id', bad: URL_BAD, request: (b) => ({ method: 'GET', url: `/api/v1/webhooks/${b}/deliveries` }) },
    { name: 'GET /webhooks/{id}/deliveries ?limit', field: 'limit', bad: URL_BAD, request: (b) => ({ method: 'GET', url: `/api/v1/webhooks/${UUID}/deliveries?limit=${b}` }) },
    { name: 'GET /webhooks/{id}/deliveries ?paymentId', field: 'paymentId', bad: URL_BAD, request: (b) => ({ method: 'GET', url: `/api/v1/webhooks/${UUID}/deliveries?paymentId=${b}` }) },
    { name: 'GET /webhooks/{id}/deliveries ?cursor', field: 'cursor', bad: URL_BAD, request: (b) => ({ method: 'GET', url: `/api/v1/webhooks/${UUID}/deliveries?cursor=${b}` }) },
    { name: 'GET /webhooks/{id}', field: 'id', bad: URL_BAD, request: (b) => ({ method: 'GET', url: `/api/v1/webhooks/${b}` }) },
    { name: 'PATCH /webhooks/{id} url', field: 'url', bad: BODY_BAD, request: (b) => ({ method: 'PATCH', url: `/api/v1/webhooks/${UUID}`, payload: { url: `https://hooks.example.com/${b}` } }) },
    { name: 'POST /webhooks/{id}/rotate-secret secret', field: 'secret', bad: BODY_BAD, request: (b) => ({ method: 'POST', url: `/api/v1/webhooks/${UUID}/rotate-secret`, payload: { secret: `${'s'.repeat(16)}${b}` } }) },
    { name: 'POST /webhooks/{id}/recover since', field: 'since', bad: BODY_BAD, request: (b) => ({ method: 'POST', url: `/api/v1/webhooks/${UUID}/recover`, payload: { since: `2026-01-01T00:00:00Z${b}` } }) },
    { name: 'GET /events ?paymentId', field: 'paymentId', bad: URL_BAD, request: (b) => ({ method: 'GET', url: `/api/v1/events?paymentId=${b}` }) },
    { name: 'GET /events ?from', field: 'from', bad: URL_BAD, request: (b) => ({ method: 'GET', url: `/api/v1/events?from=${b}` }) },
    { name: 'GET /events ?cursor', field: 'cursor', bad: URL_BAD, request: (b) => ({ method: 'GET', url: `/api/v1/events?cursor=${b}` }) },
    { name: 'GET /events/{id}', field: 'id', bad: URL_BAD, request: (b) => ({ method: 'GET', url: `/api/v1/events/${b}` }) },
    { name: 'GET /reports/payments ?page', field: 'page', bad: URL_BAD, request: (b) => ({ method: 'GET', url: `/api/v1/reports/payments?page=${b}` }) },
    { name: 'POST /devices userId', field: 'userId', bad: BODY_BAD, request: (b) => ({ method: 'POST', url: '/api/v1/devices', payload: { ...DEVICE, userId: b } }) },
    { name: 'POST /devices fcmToken', field: 'fcmToken', bad: BODY_BAD, request: (b) => ({ method: 'POST', url: '/api/v1/devices', payload: { ...DEVICE, fcmToken: b } }) },
    { name: 'POST /devices platform', field: 'platform', bad: BODY_BAD, request: (b) => ({ method: 'POST', url: '/api/v1/devices', payload: { ...DEVICE, platform: b } }) },
    { name: 'POST /webhooks url', field: 'url', bad: BODY_BAD, request: (b) => ({ method: 'POST', url: '/api/v1/webhooks', payload: { ...WEBHOOK, url: `https://hooks.example.com/${b}` } }) },
    { name: 'POST /webhooks secret', field: 'secret', bad: BODY_BAD, request: (b) => ({ method: 'POST', url: '/api/v1/webhooks', payload: { ...WEBHOOK, secret: `${'s'.repeat(16)}${b}` } }) },
    { name: 'POST /webhooks events', field: 'events.0', bad: BODY_BAD, request: (b) => ({ method: 'POST', url: '/api/v1/webhooks', payload: { ...WEBHOOK, events: [b] } }) },
    { name: 'POST /payments invoiceId', field: 'invoiceId', bad: BODY_BAD, request: (b) => ({ method: 'POST', url: '/api/v1/payments', payload: { invoiceId: b } }) },
    { name: 'POST /payments X-Idempotency-Key', field: 'x-idempotency-key', bad: ['\u0000', 'key\u0000'], request: (b) => ({ method: 'POST', url: '/api/v1/payments', payload: { invoiceId }, headers: { 'x-idempotency-key': b } }) },
    { name: 'POST /payments/report financeDay', field: 'financeDay', bad: BODY_BAD, request: (b) => ({ method: 'POST', url: '/api/v1/payments/report', payload: { financeDay: `2025-01-0${b}` } }) },
    { name: 'POST /sandbox/approve paymentId', field: 'paymentId', bad: BODY_BAD, request: (b) => ({ method: 'POST', url: '/api/v1/sandbox/approve', payload: { paymentId: b } }) },
    { name: 'admin POST /admin/partners name', admin: true, field: 'name', bad: BODY_BAD, request: (b) => ({ method: 'POST', url: '/admin/partners', payload: { name: `Bank ${b}` } }) },
    { name: 'admin POST /admin/partners qrStandard', admin: true, field: 'qrStandard', bad: BODY_BAD, request: (b) => ({ method: 'POST', url: '/admin/partners', payload: { name: 'Bank', qrStandard: b } }) },
    { name: 'admin POST /admin/partners environment', admin: true, field: 'environment', bad: BODY_BAD, request: (b) => ({ method: 'POST', url: '/admin/partners', payload: { name: 'Bank', environment: b } }) },
    { name: 'admin PATCH /admin/partners/{id}', admin: true, field: 'id', bad: URL_BAD, request: (b) => ({ method: 'PATCH', url: `/admin/partners/${b}`, payload: { active: true } }) },
    { name: 'admin PATCH /admin/partners/{id} qrStandard', admin: true, field: 'qrStandard', bad: BODY_BAD, request: (b) => ({ method: 'PATCH', url: `/admin/partners/${UUID}`, payload: { qrStandard: b } }) },
    { name: 'admin POST /admin/partners/{id}/keys', admin: true, field: 'id', bad: URL_BAD, request: (b) => ({ method: 'POST', url: `/admin/partners/${b}/keys`, payload: {} }) },
  ];

  function send(c: Case, bad: string): Promise<LightMyRequestResponse> {
    const req = c.request(bad);
    if (!c.admin) return ctx.api(key, req);
    return ctx.admin.inject({ ...req, headers: { authorization: `Bearer ${ctx.config.adminToken}`, ...req.headers } });
  }

  it.each(cases)('$name', async (c) => {
    for (const bad of c.bad) {
      const res = await send(c, bad);
      expect(res.statusCode, `${JSON.stringify(bad)}: ${res.body}`).toBe(400);
      expectWellFormed(res);
      const { message } = res.json<{ message: string[] }>();
      // Only the bad field is faulted (a format and a pattern may each say so).
      expect(message.length, JSON.stringify(bad)).toBeGreaterThan(0);
      for (const m of message) expect(m.startsWith(`${c.field} `), m).toBe(true);
    }
  });

  it('reports every bad field, and what the schema already refuses only once', async () => {
    const res = await ctx.api(key, { method: 'POST', url: '/api/v1/webhooks', payload: { url: 'https://x.example/\u0000', secret: '\ud800'.repeat(16), events: ['payment.confirmed'], extra: '\u0000' } });
    expect(res.statusCode).toBe(400);
    expect(res.json<{ message: string[] }>().message.sort()).toEqual([
      'property extra should not exist',
      'secret must not contain NUL characters or unpaired UTF-16 surrogates',
      'url must not contain NUL characters or unpaired UTF-16 surrogates',
    ]);
  });

  it('nothing refused was stored, and well-formed non-ASCII text still is', async () => {
    // Its own partner, refused here by this test, so the checks below see only what it sent.
    const p = await ctx.partner();
    const db = ctx.deps.db;
    const partnerCount = async () => (await db.selectFrom('partners').select('id').execute()).length;
    const partnersBefore = await partnerCount();
    const adminPost = (payload: object) =>
      ctx.admin.inject({ method: 'POST', url: '/admin/partners', payload, headers: { authorization: `Bearer ${ctx.config.adminToken}` } });
    for (const bad of BODY_BAD) {
      const webhook = await ctx.api(p.apiKey, { method: 'POST', url: '/api/v1/webhooks', payload: { ...WEBHOOK, secret: `${'s'.repeat(16)}${bad}` } });
      expect(webhook.statusCode, JSON.stringify(bad)).toBe(400);
      const device = await ctx.api(p.apiKey, { method: 'POST', url: '/api/v1/devices', payload: { ...DEVICE, userId: bad } });
      expect(device.statusCode, JSON.stringify(bad)).toBe(400);
      expect((await adminPost({ name: `Bank ${bad}` })).statusCode, JSON.stringify(bad)).toBe(400);
    }
    expect((await ctx.api(p.apiKey, { method: 'GET', url: '/api/v1/webhooks' })).json()).toEqual([]);
    expect(await db.selectFrom('devices').select('id').where('partner_id', '=', p.id).execute()).toEqual([]);
    expect(await partnerCount()).toBe(partnersBefore);

    const userId = 'Болд 😀 \ud83d\ude00';
    const device = await ctx.api(p.apiKey, { method: 'POST', url: '/api/v1/devices', payload: { ...DEVICE, userId } });
    expect(device.statusCode, device.body).toBe(201);
    expect(await db.selectFrom('devices').select('user_id').where('partner_id', '=', p.id).execute()).toEqual([{ user_id: userId }]);
    const named = await adminPost({ name: 'Хаан банк 😀' });
    expect(named.statusCode, named.body).toBe(201);
    const stored = await db.selectFrom('partners').select('name').where('id', '=', named.json<{ id: string }>().id).executeTakeFirstOrThrow();
    expect(stored.name).toBe('Хаан банк 😀');
  });

  it('a body nested far deeper than any schema is walked without a 5xx', async () => {
    const depth = 20_000;
    const nested = (inner: string) => `{"userId":"u","fcmToken":"t","platform":"ios","x":${'['.repeat(depth)}${inner}${']'.repeat(depth)}}`;
    const bodies = [`${'['.repeat(depth)}"\\u0000"${']'.repeat(depth)}`, nested('"\\u0000"'), nested('"\\ud800"')];
    for (const payload of bodies) {
      const res = await ctx.api(key, { method: 'POST', url: '/api/v1/devices', payload, headers: { 'content-type': 'application/json' } });
      expectWellFormed(res);
      expect(res.statusCode).toBe(400);
      // What the schema refuses whole is not also searched (no message naming a 20,000-deep path).
      expect(res.json<{ message: string[] }>().message).toHaveLength(1);
    }
  });

  it('an unknown property whose name is unstorable is one violation', async () => {
    const res = await ctx.api(key, { method: 'POST', url: '/api/v1/devices', payload: { ...DEVICE, 'a\u0000': 1 } });
    expect(res.statusCode).toBe(400);
    expect(res.json<{ message: string[] }>().message).toEqual(['property a\u0000 should not exist']);
  });
});
