import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestContext, type TestContext } from '../helpers/test-context.js';
import { checkInvariants, kyselyRunner } from '../helpers/invariants.js';
import type { InvoiceFixture } from '../../simulator/fixtures.schema.js';
import { approve as approveAt, getInvoice, getPayment, lookupRef, pay as payRequest, type Payment } from '../helpers/api.js';

/**
 * The life of a payment after the 201: linked invoices, settlement ownership, the ministry's late
 * answers and expiry. After every case the money invariants are checked in SQL.
 */
let ctx: TestContext;
let seq = 0;

beforeAll(async () => {
  ctx = await createTestContext();
});
afterAll(() => ctx.close());

function fixture(refNum: string, extra: Partial<InvoiceFixture> = {}): InvoiceFixture {
  return {
    source: 'mof',
    refNum,
    description: 'lifecycle',
    amount: 1000,
    status: 'open',
    dueDate: '2099-12-31T00:00:00.000Z',
    issuedAt: null,
    payer: { register: '8100001', name: 'Lifecycle' },
    payee: { id: 'ORG-1', name: 'Org' },
    ...extra,
  };
}

/** A fresh pair: A, which the ministry settles together with B, and B alone. */
async function linkedPair(source: 'mof' | 'etax' | 'police' = 'mof'): Promise<{ a: string; b: string }> {
  seq += 1;
  const a = `LC-${seq}-A`;
  const b = `LC-${seq}-B`;
  const res = await ctx.sim('/__control/invoices', { invoices: [fixture(a, { source, linkedRefNums: [b] }), fixture(b, { source })] });
  expect(res.statusCode).toBe(200);
  return { a, b };
}

async function single(source: 'mof' | 'etax' | 'police' = 'mof'): Promise<string> {
  seq += 1;
  const ref = `LC-${seq}-S`;
  expect((await ctx.sim('/__control/invoices', fixture(ref, { source }))).statusCode).toBe(200);
  return ref;
}

const invoiceId = async (apiKey: string, refNum: string) => (await lookupRef(ctx, apiKey, refNum)).id;
const pay = (apiKey: string, id: string) => payRequest(ctx, apiKey, { invoiceId: id });
const paymentOf = async (apiKey: string, id: string) => (await getPayment(ctx, apiKey, id)).json<Payment>();
const invoiceStatus = async (apiKey: string, id: string) => (await getInvoice(ctx, apiKey, id)).status;
const approve = (refNum: string) => approveAt(ctx, refNum);

async function simPayment(paymentId: string): Promise<{ status: string } | undefined> {
  const res = await ctx.simulator.inject({ method: 'GET', url: '/__control/payments' });
  return res.json<{ payments: { paymentId: string; status: string }[] }>().payments.find((p) => p.paymentId === paymentId);
}

async function storedPayment(id: string) {
  return ctx.deps.db.selectFrom('payments').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
}

async function expectBooksHold(): Promise<void> {
  expect(await checkInvariants(kyselyRunner(ctx.deps.db))).toEqual([]);
}

/** The confirmation job alone, one pass and everything it handed off. */
async function confirmationPass(): Promise<void> {
  const job = ctx.deps.jobs.find((j) => j.name === 'payment-confirmation');
  if (!job) throw new Error('no confirmation job');
  await job.run();
  await job.drain?.();
}

describe('linked invoices are claimed as one set', () => {
  it('refuses a payment whose linked invoice another partner holds, cancels it at the ministry, and leaves the other payment intact', async () => {
    const { a, b } = await linkedPair();
    const g = await ctx.partner();
    const f = await ctx.partner();
    const bId = await invoiceId(g.apiKey, b);
    const gRes = await pay(g.apiKey, bId);
    expect(gRes.statusCode).toBe(201);
    const gPayment = gRes.json<Payment>();

    const aId = await invoiceId(f.apiKey, a);
    const fRes = await pay(f.apiKey, aId);
    expect(fRes.statusCode).toBe(422);
    const refused = fRes.json<{ success: boolean; refNum: string; message: string }>();
    expect(refused).toMatchObject({ success: false, refNum: a });
    expect(refused.message).toMatch(/settles together/);

    const fPayment = await ctx.deps.db.selectFrom('payments').selectAll().where('invoice_id', '=', aId).executeTakeFirstOrThrow();
    expect(fPayment.status).toBe('failed');
    expect((await simPayment(fPayment.id))?.status).toBe('canceled');
    const owed = await ctx.deps.db.selectFrom('ministry_cancellations').selectAll().where('payment_id', '=', fPayment.id).executeTakeFirstOrThrow();
    expect(owed.done_at).not.toBeNull();

    expect((await paymentOf(g.apiKey, gPayment.id)).status).toBe('submitted');
    await expectBooksHold();
    expect((await approve(b)).statusCode).toBe(200);
    expect(await paymentOf(g.apiKey, gPayment.id)).toMatchObject({ status: 'confirmed', invoiceIds: [bId] });
    expect(await invoiceStatus(g.apiKey, bId)).toBe('paid');
    // A is still payable: only the refused payment was undone.
    expect(await invoiceStatus(f.apiKey, aId)).toBe('open');
    await expectBooksHold();

    // G cancels its own payment: B reopens, and nothing of F's claims it.
    expect((await ctx.api(g.apiKey, { method: 'DELETE', url: `/api/v1/payments/${gPayment.id}` })).statusCode).toBe(200);
    expect(await invoiceStatus(g.apiKey, bId)).toBe('open');
    await expectBooksHold();
  });

  it('refuses a payment whose linked invoice is already paid, and B stays paid by its one payment', async () => {
    const { a, b } = await linkedPair();
    const g = await ctx.partner();
    const bId = await invoiceId(g.apiKey, b);
    const gPayment = (await pay(g.apiKey, bId)).json<Payment>();
    await approve(b);
    expect((await paymentOf(g.apiKey, gPayment.id)).status).toBe('confirmed');

    const f = await ctx.partner();
    const fRes = await pay(f.apiKey, await invoiceId(f.apiKey, a));
    expect(fRes.statusCode).toBe(422);
    expect(await invoiceStatus(g.apiKey, bId)).toBe('paid');
    await expectBooksHold();
  });

  it('holds both invoices when nothing else holds B, and settles both on approval', async () => {
    const { a, b } = await linkedPair('etax');
    const f = await ctx.partner();
    const aId = await invoiceId(f.apiKey, a);
    const res = await pay(f.apiKey, aId);
    expect(res.statusCode).toBe(201);
    const created = res.json<Payment>();
    const bId = await invoiceId(f.apiKey, b);
    expect(created.invoiceIds).toEqual([aId, bId]);
    // B is now taken: paying it alone is refused before the ministry is asked.
    const g = await ctx.partner();
    expect((await pay(g.apiKey, await invoiceId(g.apiKey, b))).statusCode).toBe(422);
    await approve(a);
    expect((await paymentOf(f.apiKey, created.id)).status).toBe('confirmed');
    expect(await invoiceStatus(f.apiKey, bId)).toBe('paid');
    await expectBooksHold();
  });

  it('keeps owing the ministry cancellation until the ministry confirms it', async () => {
    const { a, b } = await linkedPair('police');
    const g = await ctx.partner();
    expect((await pay(g.apiKey, await invoiceId(g.apiKey, b))).statusCode).toBe(201);
    expect((await ctx.sim('/__control/faults', { source: 'police', mode: 'error', operation: 'cancel' })).statusCode).toBe(200);
    try {
      const f = await ctx.partner();
      const aId = await invoiceId(f.apiKey, a);
      expect((await pay(f.apiKey, aId)).statusCode).toBe(422);
      const refused = await ctx.deps.db.selectFrom('payments').selectAll().where('invoice_id', '=', aId).executeTakeFirstOrThrow();
      expect((await simPayment(refused.id))?.status).toBe('submitted');
      const owed = await ctx.deps.db.selectFrom('ministry_cancellations').selectAll().where('payment_id', '=', refused.id).executeTakeFirstOrThrow();
      expect(owed).toMatchObject({ done_at: null, attempts: 0 });
      expect(owed.last_error).not.toBeNull();
      await expectBooksHold();

      await ctx.sim('/__control/faults', { source: 'police', mode: 'none' });
      ctx.advance(owed.next_attempt_at.getTime() - ctx.now().getTime() + 1);
      await confirmationPass();
      expect((await simPayment(refused.id))?.status).toBe('canceled');
      const done = await ctx.deps.db.selectFrom('ministry_cancellations').selectAll().where('payment_id', '=', refused.id).executeTakeFirstOrThrow();
      expect(done.done_at).not.toBeNull();
    } finally {
      await ctx.sim('/__control/faults', { source: 'police', mode: 'none' });
    }
  });

  it('keeps the invariants when partners race for linked invoices', async () => {
    const pairs = await Promise.all([linkedPair(), linkedPair(), linkedPair()]);
    const partners = await Promise.all(Array.from({ length: 6 }, () => ctx.partner()));
    // The lookups come first, one after another: the race under test is the payments'.
    const orders: { apiKey: string; invoiceId: string }[] = [];
    for (const [i, p] of partners.entries()) {
      for (const { a, b } of pairs) orders.push({ apiKey: p.apiKey, invoiceId: await invoiceId(p.apiKey, i % 2 === 0 ? a : b) });
    }
    const attempts = await Promise.all(orders.map((o) => pay(o.apiKey, o.invoiceId)));
    expect(attempts.map((r) => r.statusCode).filter((s) => s !== 201 && s !== 422), attempts.map((r) => r.body).join("\n")).toEqual([]);
    await expectBooksHold();
    for (const { a, b } of pairs) {
      await approve(a);
      await approve(b);
    }
    await confirmationPass();
    await expectBooksHold();
  });
});

describe('settlement belongs to the payment', () => {
  it("does not show a partner another partner's confirmed payment of an invoice it once paid and canceled", async () => {
    const ref = await single();
    const f = await ctx.partner();
    const g = await ctx.partner();
    const fPayment = (await pay(f.apiKey, await invoiceId(f.apiKey, ref))).json<Payment>();
    expect((await ctx.api(f.apiKey, { method: 'DELETE', url: `/api/v1/payments/${fPayment.id}` })).statusCode).toBe(200);
    const gPayment = (await pay(g.apiKey, await invoiceId(g.apiKey, ref))).json<Payment>();
    await approve(ref);
    expect((await paymentOf(g.apiKey, gPayment.id)).status).toBe('confirmed');

    const financeDay = new Date(Date.now() + 8 * 3600_000).toISOString().slice(0, 10);
    const report = async (apiKey: string) =>
      (await ctx.api(apiKey, { method: 'POST', url: '/api/v1/payments/report', payload: { financeDay } })).json<{ entries: { refNum: string; payerName: string }[] }>();
    expect((await report(g.apiKey)).entries.map((e) => e.refNum)).toContain(ref);
    expect((await report(f.apiKey)).entries.map((e) => e.refNum)).not.toContain(ref);
    await expectBooksHold();
  });
});

describe('no payment lives for ever', () => {
  it.each([
    ['rejected', 'failed'],
    ['canceled', 'canceled'],
    ['unknown', 'failed'],
  ])('moves a submitted payment the ministry answers "%s" for to %s and frees its invoice', async (outcome, expected) => {
    const ref = await single('etax');
    const p = await ctx.partner();
    const id = await invoiceId(p.apiKey, ref);
    const created = (await pay(p.apiKey, id)).json<Payment>();
    const res = await ctx.sim('/__control/payments/outcome', { refNum: ref, outcome });
    expect(res.statusCode).toBe(200);
    await confirmationPass();
    expect((await storedPayment(created.id)).status).toBe(expected);
    await expectBooksHold();
    // The invoice is payable again.
    expect((await pay(p.apiKey, id)).statusCode).toBe(201);
  });

  it('expires a submitted payment the citizen never paid: canceled at the ministry, then canceled here', async () => {
    const ref = await single('police');
    const p = await ctx.partner();
    const id = await invoiceId(p.apiKey, ref);
    const created = (await pay(p.apiKey, id)).json<Payment>();
    await confirmationPass();
    expect((await storedPayment(created.id)).status).toBe('submitted');

    ctx.advance(ctx.config.paymentExpiryMs + 1);
    await confirmationPass();
    expect((await storedPayment(created.id)).status).toBe('canceled');
    expect((await simPayment(created.id))?.status).toBe('canceled');
    expect(await invoiceStatus(p.apiKey, id)).toBe('open');
    await expectBooksHold();
    expect((await pay(p.apiKey, id)).statusCode).toBe(201);
  });

  it('checks an unpaid payment less and less often, up to the cap', async () => {
    const ref = await single();
    const p = await ctx.partner();
    const created = (await pay(p.apiKey, await invoiceId(p.apiKey, ref))).json<Payment>();
    const gaps: number[] = [];
    for (let i = 0; i < 20; i++) {
      const before = await storedPayment(created.id);
      const wait = Math.max(0, (before.next_check_at?.getTime() ?? 0) - ctx.now().getTime());
      ctx.advance(wait);
      gaps.push(wait);
      await confirmationPass();
    }
    const after = await storedPayment(created.id);
    expect(after.status).toBe('submitted');
    expect(after.check_attempts).toBe(20);
    const last = gaps[gaps.length - 1] ?? 0;
    expect(last).toBeGreaterThan(4 * ctx.config.confirmPollMs);
    expect(Math.max(...gaps)).toBeLessThanOrEqual(ctx.config.confirmBackoffMaxMs);
  });
});

describe("the partner's cancel is recorded before the ministry is asked", () => {
  it('keeps a cancel the ministry did not answer, answers a repeated DELETE consistently, and finishes it in the job', async () => {
    const ref = await single('etax');
    const p = await ctx.partner();
    const id = await invoiceId(p.apiKey, ref);
    const created = (await pay(p.apiKey, id)).json<{ id: string }>();
    const cancel = () => ctx.api(p.apiKey, { method: 'DELETE', url: `/api/v1/payments/${created.id}` });
    expect((await ctx.sim('/__control/faults', { source: 'etax', mode: 'error', operation: 'cancel' })).statusCode).toBe(200);
    try {
      const first = await cancel();
      expect(first.statusCode, first.body).toBe(503);
      const intent = await ctx.deps.db.selectFrom('ministry_cancellations').selectAll().where('payment_id', '=', created.id).executeTakeFirstOrThrow();
      expect(intent).toMatchObject({ kind: 'partner', done_at: null });
      expect(intent.last_error).not.toBeNull();
      // Until the ministry confirms, the payment is what it was, and a repeated DELETE tries again.
      expect((await paymentOf(p.apiKey, created.id)).status).toBe('submitted');
      expect((await cancel()).statusCode).toBe(503);
      await expectBooksHold();

      await ctx.sim('/__control/faults', { source: 'etax', mode: 'none' });
      ctx.advance(intent.next_attempt_at.getTime() - ctx.now().getTime() + 60_000);
      await confirmationPass();
    } finally {
      await ctx.sim('/__control/faults', { source: 'etax', mode: 'none' });
    }
    const done = await ctx.deps.db.selectFrom('ministry_cancellations').selectAll().where('payment_id', '=', created.id).executeTakeFirstOrThrow();
    expect(done.done_at).not.toBeNull();
    expect((await simPayment(created.id))?.status).toBe('canceled');
    expect((await paymentOf(p.apiKey, created.id)).status).toBe('canceled');
    expect(await invoiceStatus(p.apiKey, id)).toBe('open');
    const again = await cancel();
    expect(again.statusCode).toBe(409);
    await expectBooksHold();
  });

  it('cancels at once when the ministry answers, leaving the intent closed', async () => {
    const ref = await single('mof');
    const p = await ctx.partner();
    const id = await invoiceId(p.apiKey, ref);
    const created = (await pay(p.apiKey, id)).json<{ id: string }>();
    const res = await ctx.api(p.apiKey, { method: 'DELETE', url: `/api/v1/payments/${created.id}` });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toEqual({ id: created.id, canceled: true });
    const intent = await ctx.deps.db.selectFrom('ministry_cancellations').selectAll().where('payment_id', '=', created.id).executeTakeFirstOrThrow();
    expect(intent.kind).toBe('partner');
    expect(intent.done_at).not.toBeNull();
    expect((await simPayment(created.id))?.status).toBe('canceled');
    await expectBooksHold();
  });
});
