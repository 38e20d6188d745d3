import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestContext, type TestContext } from '../helpers/test-context.js';
import { approve, cancelPayment, getInvoice, getPayment, ownInvoice, payOk, type OwnInvoice, type Partner, type Payment } from '../helpers/api.js';

let ctx: TestContext;

beforeAll(async () => {
  // A TTL far longer than the test: only the repositories' invalidation can refresh a cached copy.
  ctx = await createTestContext({ config: { invoiceCache: { ttlMs: 600_000, maxEntries: 1000 } } });
});
afterAll(() => ctx.close());

const status = async (partner: Partner, id: string) => (await getInvoice(ctx, partner.apiKey, id)).status;

/** A partner and an invoice of this test's own, retrieved by it and read once so the cache holds it. */
async function cachedInvoice(): Promise<{ partner: Partner; invoice: OwnInvoice }> {
  const partner = await ctx.partner();
  const invoice = await ownInvoice(ctx, partner, 'mof');
  expect(await status(partner, invoice.id)).toBe('open');
  return { partner, invoice };
}

describe('GET /invoices/{id} after a payment changes the invoice (cached read-through)', () => {
  it('shows paid once the confirmation job confirms the payment', async () => {
    const { partner, invoice } = await cachedInvoice();
    const payment = await payOk(ctx, partner.apiKey, { invoiceId: invoice.id });
    expect((await approve(ctx, invoice.refNum)).statusCode).toBe(200);
    await expect.poll(async () => {
      await ctx.runJobs();
      return status(partner, invoice.id);
    }).toBe('paid');
    const stored = await ctx.deps.db.selectFrom('payments').select('status').where('id', '=', payment.id).executeTakeFirstOrThrow();
    expect(stored.status).toBe('confirmed');
  });

  it('shows open again once the partner cancels the confirmed payment', async () => {
    const { partner, invoice } = await cachedInvoice();
    const payment = await payOk(ctx, partner.apiKey, { invoiceId: invoice.id });
    expect((await approve(ctx, invoice.refNum)).statusCode).toBe(200);
    expect((await getPayment(ctx, partner.apiKey, payment.id)).json<Payment>().status).toBe('confirmed');
    expect(await status(partner, invoice.id)).toBe('paid');
    expect((await cancelPayment(ctx, partner.apiKey, payment.id)).statusCode).toBe(200);
    expect(await status(partner, invoice.id)).toBe('open');
  });
});
