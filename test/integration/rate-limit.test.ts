import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LightMyRequestResponse } from 'fastify';
import { createTestContext, type TestContext } from '../helpers/test-context.js';
import { addOwnInvoice } from '../helpers/own-invoice.js';

let ctx: TestContext;
// The limiter gets its own clock that moves only when a test says so: real time passing on a slow
// machine must not slide the windows under the assertions.
let limiterNow = 1_750_000_000_000;
const advance = (ms: number) => {
  limiterNow += ms;
};

beforeAll(async () => {
  ctx = await createTestContext({
    config: { rateLimit: { perSecond: 5, perMinute: 60, perHour: 1000 } },
    rateLimitClock: () => limiterNow,
  });
});
afterAll(() => ctx.close());

const TOO_MANY = { statusCode: 429, message: 'Too Many Requests', error: 'Too Many Requests', code: 'rate_limited' };
const POLICY = '"per-second";q=5;w=1, "per-minute";q=60;w=60, "per-hour";q=1000;w=3600';

const summary = (apiKey: string) => ctx.api(apiKey, { method: 'GET', url: '/api/v1/reports/summary' });
const statuses = (responses: LightMyRequestResponse[]) => responses.map((r) => r.statusCode);
const burst = (n: number, send: () => Promise<LightMyRequestResponse>) => Promise.all(Array.from({ length: n }, send));

/** Sends one request per `stepMs` of service time and returns the status codes. */
async function paced(apiKey: string, n: number, stepMs: number): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    out.push((await summary(apiKey)).statusCode);
    advance(stepMs);
  }
  return out;
}

describe('per-key rate limits over HTTP', () => {
  it('lets 5 of a concurrent burst of 8 through and refuses 3 with 429 and headers', async () => {
    const { apiKey } = await ctx.partner();
    const responses = await burst(8, () => summary(apiKey));
    expect(statuses(responses).filter((s) => s === 200)).toHaveLength(5);
    const refused = responses.filter((r) => r.statusCode === 429);
    expect(refused).toHaveLength(3);
    for (const r of refused) {
      expect(r.json()).toEqual({ ...TOO_MANY, requestId: r.headers['x-request-id'] });
      expect(Number(r.headers['retry-after'])).toBeGreaterThanOrEqual(1);
      expect(r.headers['ratelimit-policy']).toBe(POLICY);
      expect(r.headers['ratelimit']).toMatch(/^"per-second";r=0;t=1, "per-minute";r=55;t=60, "per-hour";r=995;t=3600$/);
    }
  });

  it('reports the remaining quota on accepted responses too', async () => {
    const { apiKey } = await ctx.partner();
    const res = await summary(apiKey);
    expect(res.statusCode).toBe(200);
    expect(res.headers['ratelimit-policy']).toBe(POLICY);
    expect(res.headers['ratelimit']).toBe('"per-second";r=4;t=1, "per-minute";r=59;t=60, "per-hour";r=999;t=3600');
    expect(res.headers['retry-after']).toBeUndefined();
  });

  it('trips the minute window at request 61 and recovers as it slides', async () => {
    const { apiKey } = await ctx.partner();
    expect(await paced(apiKey, 60, 500)).toEqual(Array(60).fill(200));
    const refused = await summary(apiKey);
    expect(refused.statusCode).toBe(429);
    expect(refused.headers['retry-after']).toBe('30');
    advance(30_000);
    expect((await summary(apiKey)).statusCode).toBe(200);
  });

  it('trips the hour window at request 1001', async () => {
    const { apiKey } = await ctx.partner();
    const codes = await paced(apiKey, 1000, 3500);
    expect(codes.every((c) => c === 200)).toBe(true);
    const refused = await summary(apiKey);
    expect(refused.statusCode).toBe(429);
    expect(refused.headers['ratelimit']).toBe('"per-second";r=5;t=0, "per-minute";r=43;t=1, "per-hour";r=0;t=100');
    expect(refused.headers['retry-after']).toBe('100');
  });

  it('keeps each key to its own quota', async () => {
    const a = await ctx.partner();
    const b = await ctx.partner();
    expect(statuses(await burst(6, () => summary(a.apiKey))).sort()).toEqual([200, 200, 200, 200, 200, 429]);
    expect(statuses(await burst(5, () => summary(b.apiKey)))).toEqual([200, 200, 200, 200, 200]);
  });

  it('refuses before validation and business logic, so a payment retry with the same key is safe', async () => {
    const { apiKey } = await ctx.partner();
    // An invoice of its own, so the payment below is free whatever other tests paid.
    const { refNum } = await addOwnInvoice(ctx, 'mof');
    const lookup = await ctx.api(apiKey, { method: 'GET', url: `/api/v1/invoices/ref/${refNum}` });
    expect(lookup.statusCode).toBe(200);
    const invoiceId = lookup.json<{ id: string }>().id;
    // With the lookup, the second's quota of 5 is used up.
    await burst(4, () => summary(apiKey));
    const pay = () =>
      ctx.api(apiKey, { method: 'POST', url: '/api/v1/payments', payload: { invoiceId }, headers: { 'x-idempotency-key': 'c0ffee00-0000-4000-8000-000000000001' } });
    const invalid = await ctx.api(apiKey, { method: 'POST', url: '/api/v1/payments', payload: { invoiceId: 'nope', extra: 1 } });
    expect(invalid.statusCode).toBe(429);
    expect((await pay()).statusCode).toBe(429);
    advance(1000);
    const first = await pay();
    expect(first.statusCode).toBe(201);
    expect(first.json<{ message?: string }>().message).toBeUndefined();
  });

  it('does not limit the health endpoints or the admin listener', async () => {
    const health = await burst(20, () => ctx.app.inject({ method: 'GET', url: '/api/v1/health/live' }));
    expect(statuses(health)).toEqual(Array(20).fill(200));
    expect(health[0]?.headers['ratelimit']).toBeUndefined();
    const admin = await burst(20, () =>
      ctx.admin.inject({ method: 'GET', url: '/admin/partners', headers: { authorization: `Bearer ${ctx.config.adminToken}` } }),
    );
    expect(statuses(admin)).toEqual(Array(20).fill(200));
  });

  it('answers unauthenticated requests with 401 without touching any quota', async () => {
    const res = await burst(10, () => ctx.api('gpk_sandbox_' + 'x'.repeat(32), { method: 'GET', url: '/api/v1/reports/summary' }));
    expect(statuses(res)).toEqual(Array(10).fill(401));
  });
});

describe('store failure', () => {
  it('fails open without limiting or hanging when Redis is down', async () => {
    const down = await createTestContext({ config: { redisUrl: 'redis://127.0.0.1:1', rateLimit: { perSecond: 1, perMinute: 1, perHour: 1 } } });
    try {
      const { apiKey } = await down.partner();
      const res = await Promise.all(Array.from({ length: 3 }, () => down.api(apiKey, { method: 'GET', url: '/api/v1/reports/summary' })));
      expect(statuses(res)).toEqual([200, 200, 200]);
      expect(res[0]?.headers['ratelimit']).toBeUndefined();
    } finally {
      await down.close();
    }
  });

  it('fails closed with 503 when configured to', async () => {
    const down = await createTestContext({ config: { redisUrl: 'redis://127.0.0.1:1', rateLimitFailOpen: false } });
    try {
      const { apiKey } = await down.partner();
      const res = await down.api(apiKey, { method: 'GET', url: '/api/v1/reports/summary' });
      expect(res.statusCode).toBe(503);
      expect(res.headers['retry-after']).toBe('1');
      expect(res.json()).toEqual({ statusCode: 503, message: 'Service temporarily unavailable', error: 'Service Unavailable', code: 'service_unavailable', requestId: res.headers['x-request-id'] });
    } finally {
      await down.close();
    }
  });
});
