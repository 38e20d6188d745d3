import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestContext, type TestContext } from '../helpers/test-context.js';
import { approve, cancelPayment, getInvoice, getPayment, ownInvoice, payOk, searchInvoices, type OwnInvoice, type Partner, type Payment } from '../helpers/api.js';

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

describe('GET /invoices/{id} right after a lookup (the lookup fills the cache)', () => {
  /** Changes the stored row behind the service's back: only a database read would see it. */
  const rewriteDescription = (id: string) => ctx.deps.db.updateTable('invoices').set({ description: 'changed in the database' }).where('id', '=', id).execute();

  it('answers from the row the lookup by reference stored', async () => {
    const partner = await ctx.partner();
    const invoice = await ownInvoice(ctx, partner, 'etax');
    await rewriteDescription(invoice.id);
    expect((await getInvoice(ctx, partner.apiKey, invoice.id)).description).toBe(invoice.fixture.description);
  });

  it('answers from the rows a search stored, only for the partner that searched', async () => {
    const partner = await ctx.partner();
    const other = await ctx.partner();
    const register = `R-${randomUUID()}`;
    const invoice = await ownInvoice(ctx, other, 'police', { payer: { register, name: 'Тест ХХК' } });
    const found = await searchInvoices(ctx, partner.apiKey, `ttd=${encodeURIComponent(register)}`);
    const mine = found.invoices.find((i) => i.id === invoice.id);
    expect(mine?.description).toBe(invoice.fixture.description);
    await rewriteDescription(invoice.id);
    expect((await getInvoice(ctx, partner.apiKey, invoice.id)).description).toBe(invoice.fixture.description);
    // A partner that never retrieved it is not let in by what the cache holds.
    const stranger = await ctx.partner();
    expect((await ctx.api(stranger.apiKey, { method: 'GET', url: `/api/v1/invoices/${invoice.id}` })).statusCode).toBe(404);
  });
});
