import fc from 'fast-check';
import type { LightMyRequestResponse } from 'fastify';
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
