import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testConfig } from '../helpers/test-config.js';
import { createTestContext, dropSchema, type TestContext } from '../helpers/test-context.js';
import { testFixtures } from '../helpers/fixtures.js';

const base = testConfig();
const enabled = Boolean(base.databaseUrl && base.redisUrl);
const schema = `t_${randomBytes(6).toString('hex')}`;
// Long enough that only an announcement over Redis, not expiry, can refresh the other instance.
const config = { invoiceCache: { ttlMs: 600_000, maxEntries: 1000 } };

let a: TestContext;
let b: TestContext;

async function statusVia(ctx: TestContext, key: string, id: string): Promise<string> {
  return (await ctx.api(key, { method: 'GET', url: `/api/v1/invoices/${id}` })).json<{ status: string }>().status;
}

async function eventually(read: () => Promise<string>, want: string): Promise<string> {
  let last = await read();
  for (let i = 0; i < 40 && last !== want; i++) {
    await new Promise((r) => setTimeout(r, 50));
    last = await read();
  }
  return last;
}

describe.skipIf(!enabled)('invoice cache across two instances (shared PostgreSQL and Redis)', () => {
  beforeAll(async () => {
    a = await createTestContext({ reuseSchema: schema, config });
    b = await createTestContext({ reuseSchema: schema, config });
  });

  afterAll(async () => {
    await a?.close();
    await b?.close();
    if (base.databaseUrl) await dropSchema(base.databaseUrl, schema);
  });

  it('shows a payment confirmed through one instance on the other without waiting for expiry', async () => {
    const { apiKey } = await a.partner();
    const viaA = (await a.api(apiKey, { method: 'GET', url: '/api/v1/invoices/ref/MOF-T-1' })).json<{ id: string }>();
    const viaB = (await b.api(apiKey, { method: 'GET', url: '/api/v1/invoices/ref/MOF-T-1' })).json<{ id: string }>();
    expect(viaB.id).toBe(viaA.id);
    expect(await statusVia(b, apiKey, viaA.id)).toBe('open');

    const payment = (await a.api(apiKey, { method: 'POST', url: '/api/v1/payments', payload: { invoiceId: viaA.id } })).json<{ id: string }>();
    await a.sim('/__control/approve', { refNum: 'MOF-T-1' });
    const confirmed = (await a.api(apiKey, { method: 'GET', url: `/api/v1/payments/${payment.id}` })).json<{ status: string }>();
    expect(confirmed.status).toBe('confirmed');

    expect(await statusVia(a, apiKey, viaA.id)).toBe('paid');
    expect(await eventually(() => statusVia(b, apiKey, viaA.id), 'paid')).toBe('paid');
  });

  it('shows a fresher copy stored through one instance on the other', async () => {
    const { apiKey } = await a.partner();
    const viaA = (await a.api(apiKey, { method: 'GET', url: '/api/v1/invoices/ref/ET-T-1' })).json<{ id: string }>();
    await b.api(apiKey, { method: 'GET', url: '/api/v1/invoices/ref/ET-T-1' });
    expect(await statusVia(b, apiKey, viaA.id)).toBe('open');

    // Paid at the ministry through another channel; instance A looks it up again.
    const paid = testFixtures().invoices.find((i) => i.refNum === 'ET-T-1');
    await a.sim('/__control/invoices', { invoices: [{ ...paid, status: 'paid' }] });
    const fresh = (await a.api(apiKey, { method: 'GET', url: '/api/v1/invoices/ref/ET-T-1' })).json<{ status: string }>();
    expect(fresh.status).toBe('paid');

    expect(await eventually(() => statusVia(b, apiKey, viaA.id), 'paid')).toBe('paid');
  });
});
