import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createTestContext, type TestContext } from '../helpers/test-context.js';
import { REG } from '../helpers/fixtures.js';
import { addOwnInvoice } from '../helpers/own-invoice.js';

let ctx: TestContext;
let logs = '';
let a: { id: string; apiKey: string };
let b: { id: string; apiKey: string };
let invoiceId: string;
let paymentId: string;
/** Every API key handed out in this file, all of which must stay out of the logs. */
const apiKeys: string[] = [];

const partner = async () => {
  const created = await ctx.partner();
  apiKeys.push(created.apiKey);
  return created;
};

beforeAll(async () => {
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      logs += chunk.toString();
      done();
    },
  });
  ctx = await createTestContext({ logger: pino({ level: 'debug' }, sink) });
});
afterAll(() => ctx.close());

// Every test gets its own pair of partners, and A its own invoice and payment, so nothing one
// test does (B searching, A paying) shows in another.
beforeEach(async () => {
  a = await partner();
  b = await partner();
  const { refNum } = await addOwnInvoice(ctx, 'mof', { amount: 12000.5 });
  const invoice = await ctx.api(a.apiKey, { method: 'GET', url: `/api/v1/invoices/ref/${refNum}` });
  expect(invoice.statusCode).toBe(200);
  invoiceId = invoice.json<{ id: string }>().id;
  const created = await ctx.api(a.apiKey, { method: 'POST', url: '/api/v1/payments', payload: { invoiceId } });
  expect(created.statusCode).toBe(201);
  paymentId = created.json<{ id: string }>().id;
});

describe("partner B never reaches partner A's objects", () => {
  it('answers 404 on every id-taking endpoint', async () => {
    const probes: [string, string][] = [
      ['GET', `/api/v1/invoices/${invoiceId}`],
      ['GET', `/api/v1/invoices/${invoiceId}/refresh`],
      ['GET', `/api/v1/payments/${paymentId}`],
      ['DELETE', `/api/v1/payments/${paymentId}`],
    ];
    for (const [method, url] of probes) {
      const res = await ctx.api(b.apiKey, { method: method as 'GET' | 'DELETE', url });
      expect(res.statusCode, `${method} ${url}`).toBe(404);
      const own = await ctx.api(a.apiKey, { method: 'GET', url: url.replace('/refresh', '') });
      expect(own.statusCode).toBe(200);
    }
    const pay = await ctx.api(b.apiKey, { method: 'POST', url: '/api/v1/payments', payload: { invoiceId } });
    expect(pay.statusCode).toBe(404);
  });

  it("keeps A's payments out of B's reports", async () => {
    const list = (await ctx.api(b.apiKey, { method: 'GET', url: '/api/v1/reports/payments' })).json<{ items: unknown[]; total: number }>();
    expect(list).toMatchObject({ items: [], total: 0 });
    const summary = (await ctx.api(b.apiKey, { method: 'GET', url: '/api/v1/reports/summary' })).json<{ total: number }>();
    expect(summary.total).toBe(0);
    const mine = (await ctx.api(a.apiKey, { method: 'GET', url: '/api/v1/reports/payments' })).json<{ items: { id: string }[] }>();
    expect(mine.items.map((i) => i.id)).toContain(paymentId);
  });

  it('does not reuse idempotency keys across partners', async () => {
    await ctx.api(b.apiKey, { method: 'GET', url: `/api/v1/invoices?ttd=${REG}` });
    const { refNum } = await addOwnInvoice(ctx, 'police', { amount: 50000 });
    const other = (await ctx.api(b.apiKey, { method: 'GET', url: `/api/v1/invoices/ref/${refNum}` })).json<{ id: string }>().id;
    const headers = { 'x-idempotency-key': 'same-key-both' };
    const first = await ctx.api(a.apiKey, { method: 'POST', url: '/api/v1/payments', payload: { invoiceId: other }, headers });
    expect(first.statusCode).toBe(404);
    const second = await ctx.api(b.apiKey, { method: 'POST', url: '/api/v1/payments', payload: { invoiceId: other }, headers });
    expect(second.statusCode).toBe(201);
    expect(second.headers['idempotent-replayed']).toBeUndefined();
  });
});

describe('secrets stay out of the logs', () => {
  it('never logs API keys or the admin token, even on failed requests', async () => {
    await ctx.api(a.apiKey, { method: 'GET', url: `/api/v1/invoices?ttd=${REG}` });
    await ctx.app.inject({ method: 'GET', url: '/api/v1/invoices', headers: { 'x-api-key': `${a.apiKey}x` } });
    await ctx.admin.inject({ method: 'GET', url: '/admin/partners', headers: { authorization: `Bearer ${ctx.config.adminToken}` } });
    expect(logs.length).toBeGreaterThan(0);
    expect(logs).toContain('"reqId"');
    expect(logs).not.toContain(a.apiKey);
    expect(logs).not.toContain(b.apiKey);
    for (const apiKey of apiKeys) expect(logs).not.toContain(apiKey);
    expect(logs).not.toContain(ctx.config.adminToken);
  });
});
