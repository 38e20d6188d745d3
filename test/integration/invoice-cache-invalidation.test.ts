import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestContext, type TestContext } from '../helpers/test-context.js';
import { addOwnInvoice } from '../helpers/own-invoice.js';

let ctx: TestContext;
let key: string;

beforeAll(async () => {
  // A TTL far longer than the test: only the repositories' invalidation can refresh a cached copy.
  ctx = await createTestContext({ config: { invoiceCache: { ttlMs: 600_000, maxEntries: 1000 } } });
  key = (await ctx.partner()).apiKey;
});
afterAll(() => ctx.close());

const status = async (id: string) => (await ctx.api(key, { method: 'GET', url: `/api/v1/invoices/${id}` })).json<{ status: string }>().status;

/** An invoice of this test's own, retrieved by the partner and read once so the cache holds it. */
async function cachedInvoice(): Promise<{ id: string; refNum: string }> {
  const { refNum } = await addOwnInvoice(ctx, 'mof');
  const { id } = (await ctx.api(key, { method: 'GET', url: `/api/v1/invoices/ref/${refNum}` })).json<{ id: string }>();
  expect(await status(id)).toBe('open');
  return { id, refNum };
}

describe('GET /invoices/{id} after a payment changes the invoice (cached read-through)', () => {
  it('shows paid once the confirmation job confirms the payment', async () => {
    const { id, refNum } = await cachedInvoice();
    const payment = (await ctx.api(key, { method: 'POST', url: '/api/v1/payments', payload: { invoiceId: id } })).json<{ id: string }>();
    await ctx.sim('/__control/approve', { refNum });
    await expect.poll(async () => {
      await ctx.runJobs();
      return status(id);
    }).toBe('paid');
    const stored = await ctx.deps.db.selectFrom('payments').select('status').where('id', '=', payment.id).executeTakeFirstOrThrow();
    expect(stored.status).toBe('confirmed');
  });

  it('shows open again once the partner cancels the confirmed payment', async () => {
    const { id, refNum } = await cachedInvoice();
    const payment = (await ctx.api(key, { method: 'POST', url: '/api/v1/payments', payload: { invoiceId: id } })).json<{ id: string }>();
    await ctx.sim('/__control/approve', { refNum });
    expect((await ctx.api(key, { method: 'GET', url: `/api/v1/payments/${payment.id}` })).json<{ status: string }>().status).toBe('confirmed');
    expect(await status(id)).toBe('paid');
    expect((await ctx.api(key, { method: 'DELETE', url: `/api/v1/payments/${payment.id}` })).statusCode).toBe(200);
    expect(await status(id)).toBe('open');
  });
});
