import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createTestContext, type TestContext } from '../helpers/test-context.js';
import { checkInvariants, kyselyRunner } from '../helpers/invariants.js';
import { approve, approveAndConfirm, atMinistry, cancelPayment, getInvoice, getPayment, lookupRef, ownInvoice, pay, payOk, type OwnInvoice, type Partner, type Payment, type PaymentCreated } from '../helpers/api.js';
import { leasePolicyOf } from '../../src/composition/data.factory.js';
import type { Source } from '../../src/domain/vocabulary.js';

/*
 * Where the books and the ministry must agree: a reversal of a confirmed part-payment gives back
 * exactly what it took, whoever paid the invoice since, and a submit whose outcome is unknown is
 * followed at the ministry until it answers, never written off while it may still arrive.
 */
let ctx: TestContext;

beforeAll(async () => {
  ctx = await createTestContext();
});
afterAll(() => ctx.close());



/** Two partners who both retrieved one part-payable invoice of 1,000. */
async function sharedInvoice(source: Source): Promise<{ a: Partner; b: Partner; invoice: OwnInvoice }> {
  const a = await ctx.partner();
  const b = await ctx.partner();
  const invoice = await ownInvoice(ctx, a, source, { amount: 1000, allowPartial: true });
  await lookupRef(ctx, b.apiKey, invoice.refNum);
  return { a, b, invoice };
}

const statusOf = async (partner: Partner, id: string) => (await getPayment(ctx, partner.apiKey, id)).json<Payment>().status;

describe('reversing a confirmed part-payment', () => {
  it('after another payment settled the invoice: the invoice owes the reversed amount again, as at the ministry, and it can be paid', async () => {
    const { a, b, invoice } = await sharedInvoice('etax');
    const first = await payOk(ctx, a.apiKey, { invoiceId: invoice.id, amount: 600 });
    await approveAndConfirm(ctx, invoice.refNum);
    const rest = await payOk(ctx, b.apiKey, { invoiceId: invoice.id, amount: 400 });
    await approveAndConfirm(ctx, invoice.refNum);
    expect(await statusOf(b, rest.id)).toBe('confirmed');
    expect(await getInvoice(ctx, a.apiKey, invoice.id)).toMatchObject({ status: 'paid' });

    expect((await cancelPayment(ctx, a.apiKey, first.id)).json()).toEqual({ id: first.id, canceled: true });
    expect(await atMinistry(ctx, 'etax', invoice.refNum)).toEqual({ status: 'open', amount: '600' });
    expect(await getInvoice(ctx, a.apiKey, invoice.id)).toMatchObject({ status: 'open', amount: 600 });
    const refreshed = await ctx.api(b.apiKey, { method: 'GET', url: `/api/v1/invoices/${invoice.id}/refresh` });
    expect(refreshed.json()).toMatchObject({ status: 'open', amount: 600 });
    expect(await statusOf(b, rest.id)).toBe('confirmed');
    expect(await checkInvariants(kyselyRunner(ctx.deps.db))).toEqual([]);

    const again = await payOk(ctx, a.apiKey, { invoiceId: invoice.id, amount: 600 });
    await approveAndConfirm(ctx, invoice.refNum);
    expect(await statusOf(a, again.id)).toBe('confirmed');
    expect(await atMinistry(ctx, 'etax', invoice.refNum)).toMatchObject({ status: 'paid' });
    expect(await getInvoice(ctx, a.apiKey, invoice.id)).toMatchObject({ status: 'paid' });
    expect(await checkInvariants(kyselyRunner(ctx.deps.db))).toEqual([]);

    // The payment that had settled it, reversed too: the invoice owes what it took back on top.
    expect((await cancelPayment(ctx, b.apiKey, rest.id)).statusCode).toBe(200);
    expect(await atMinistry(ctx, 'etax', invoice.refNum)).toEqual({ status: 'open', amount: '400' });
    expect(await getInvoice(ctx, a.apiKey, invoice.id)).toMatchObject({ status: 'open', amount: 400 });
    expect(await checkInvariants(kyselyRunner(ctx.deps.db))).toEqual([]);
  });

  it('while another payment of the rest is submitted: the hold stays, the balance is raised, and that payment confirms as a part-payment', async () => {
    const { a, b, invoice } = await sharedInvoice('mof');
    const first = await payOk(ctx, a.apiKey, { invoiceId: invoice.id, amount: 600 });
    await approveAndConfirm(ctx, invoice.refNum);
    const rest = await payOk(ctx, b.apiKey, { invoiceId: invoice.id, amount: 400 });
    expect(rest.status).toBe('submitted');

    expect((await cancelPayment(ctx, a.apiKey, first.id)).statusCode).toBe(200);
    expect(await atMinistry(ctx, 'mof', invoice.refNum)).toEqual({ status: 'open', amount: '1000' });
    expect(await getInvoice(ctx, a.apiKey, invoice.id)).toMatchObject({ status: 'open', amount: 1000 });
    // Still held by the submitted payment: no other payment may take the invoice meanwhile.
    expect((await pay(ctx, a.apiKey, { invoiceId: invoice.id, amount: 100 })).statusCode).toBe(422);
    expect(await checkInvariants(kyselyRunner(ctx.deps.db))).toEqual([]);

    await approveAndConfirm(ctx, invoice.refNum);
    expect(await statusOf(b, rest.id)).toBe('confirmed');
    expect(await atMinistry(ctx, 'mof', invoice.refNum)).toEqual({ status: 'open', amount: '600' });
    expect(await getInvoice(ctx, a.apiKey, invoice.id)).toMatchObject({ status: 'open', amount: 600 });
    expect(await checkInvariants(kyselyRunner(ctx.deps.db))).toEqual([]);

    const again = await payOk(ctx, a.apiKey, { invoiceId: invoice.id });
    expect(again.amount).toBe(600);
    await approveAndConfirm(ctx, invoice.refNum);
    expect(await getInvoice(ctx, a.apiKey, invoice.id)).toMatchObject({ status: 'paid' });
    expect(await checkInvariants(kyselyRunner(ctx.deps.db))).toEqual([]);
  });
});

describe('a submit that reaches the ministry late', () => {
  // A context of each test's own: the wait is measured against its clock, which each test moves far.
  let held: TestContext;
  beforeEach(async () => {
    held = await createTestContext();
  });
  afterEach(() => held.close());

  /** The id of the payment whose submit the simulator holds for the invoice. */
  async function heldPaymentId(refNum: string): Promise<string> {
    const { held: caught } = (await held.simulator.inject({ method: 'GET', url: `/__control/submits?refNum=${encodeURIComponent(refNum)}` })).json<{ held: { paymentId: string }[] }>();
    expect(caught).toHaveLength(1);
    return caught[0]?.paymentId ?? '';
  }
  const paymentsOf = (invoiceId: string) => held.deps.db.selectFrom('payments').select(['id', 'status']).where('invoice_id', '=', invoiceId).execute();

  it('leaves the payment pending past its lease, follows the ministry once the submit lands, and confirms it', async () => {
    const partner = await held.partner();
    const other = await held.partner();
    const invoice = await ownInvoice(held, partner, 'police', { amount: 1500 });
    await lookupRef(held, other.apiKey, invoice.refNum);
    expect((await held.sim('/__control/submits/hold', { source: 'police', refNum: invoice.refNum, point: 'before' })).statusCode).toBe(200);

    const headers = { 'x-idempotency-key': 'late-submit' };
    const first = await pay(held, partner.apiKey, { invoiceId: invoice.id }, headers);
    expect(first.statusCode, first.body).toBe(503);
    const paymentId = await heldPaymentId(invoice.refNum);

    // Past the request's lease: the ministry does not know the payment yet, so it stays pending.
    held.advance(leasePolicyOf(held.config).idempotency + 1000);
    await held.runJobs();
    expect(await paymentsOf(invoice.id)).toEqual([{ id: paymentId, status: 'pending' }]);
    expect((await pay(held, other.apiKey, { invoiceId: invoice.id })).json()).toMatchObject({ success: false, message: 'Another payment for this invoice is in progress' });

    expect((await held.sim('/__control/submits/release', { source: 'police', refNum: invoice.refNum })).statusCode).toBe(200);
    const ministryStatus = async () => (await held.deps.ministries.police.getPayment({ paymentId, refNum: invoice.refNum })).status;
    const deadline = Date.now() + 10_000;
    while ((await ministryStatus()) === 'unknown' && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
    expect(await ministryStatus()).toBe('submitted');
    held.advance(60_000);
    await held.runJobs();
    expect(await paymentsOf(invoice.id)).toEqual([{ id: paymentId, status: 'submitted' }]);

    const retry = await pay(held, partner.apiKey, { invoiceId: invoice.id }, headers);
    expect(retry.statusCode, retry.body).toBe(201);
    expect(retry.json<PaymentCreated>()).toMatchObject({ id: paymentId, status: 'submitted' });

    expect((await approve(held, invoice.refNum)).statusCode).toBe(200);
    held.advance(60_000);
    await held.runJobs();
    expect((await getPayment(held, partner.apiKey, paymentId)).json<Payment>()).toMatchObject({ id: paymentId, status: 'confirmed' });
    expect(await getInvoice(held, partner.apiKey, invoice.id)).toMatchObject({ status: 'paid' });
    expect(await ministryStatus()).toBe('confirmed');
    expect(await checkInvariants(kyselyRunner(held.deps.db))).toEqual([]);
  });

  it('fails a payment the ministry still does not know at the end of the wait, and owes its cancellation there first', async () => {
    const partner = await held.partner();
    const invoice = await ownInvoice(held, partner, 'mof', { amount: 800 });
    expect((await held.sim('/__control/submits/hold', { source: 'mof', refNum: invoice.refNum, point: 'before' })).statusCode).toBe(200);
    expect((await pay(held, partner.apiKey, { invoiceId: invoice.id })).statusCode).toBe(503);
    const paymentId = await heldPaymentId(invoice.refNum);

    // The wait counts from the payment's creation, on the database's clock, which the test's advances do not move.
    const { created_at: createdAt } = await held.deps.db.selectFrom('payments').select('created_at').where('id', '=', paymentId).executeTakeFirstOrThrow();
    held.advance(createdAt.getTime() + held.config.paymentUnknownOutcomeMs - 60_000 - held.now().getTime());
    await held.runJobs();
    expect(await paymentsOf(invoice.id)).toEqual([{ id: paymentId, status: 'pending' }]);

    held.advance(120_000);
    await held.runJobs();
    expect(await paymentsOf(invoice.id)).toEqual([{ id: paymentId, status: 'failed' }]);
    const owed = await held.deps.db.selectFrom('ministry_cancellations').select(['kind', 'done_at']).where('payment_id', '=', paymentId).executeTakeFirstOrThrow();
    // The ministry had none to cancel: that is as good as canceled.
    expect(owed).toEqual({ kind: 'owed', done_at: expect.any(Date) });
    expect(await getInvoice(held, partner.apiKey, invoice.id)).toMatchObject({ status: 'open' });
    expect(await checkInvariants(kyselyRunner(held.deps.db))).toEqual([]);
    expect((await held.sim('/__control/submits/release', { source: 'mof', refNum: invoice.refNum, fail: true })).statusCode).toBe(200);
  });
});
