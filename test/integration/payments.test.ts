import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createTestContext, type TestContext } from '../helpers/test-context.js';
import { checkInvariants, kyselyRunner } from '../helpers/invariants.js';
import { unique } from '../helpers/own-invoice.js';
import type { Source } from '../../src/domain/vocabulary.js';
import { decodeQrImage, referenceCrc16, topLevelTags } from '../helpers/qr-decode.js';
import {
  approve,
  approveAndConfirm,
  badRequest,
  atMinistry,
  cancelPayment,
  getInvoice,
  getPayment,
  lookupRef,
  ownInvoice,
  partnerWithInvoice,
  pay,
  payOk,
  searchInvoices,
  summary,
  type Payment,
  type PaymentCreated,
  type PaymentFailed,
  type PaymentList,
  type Settlement,
} from '../helpers/api.js';

/*
 * Every test makes its own partner and its own invoices at the simulator (test/helpers/api.ts), so
 * each one passes alone and in any order: nothing here pays, holds or counts another test's rows.
 */

let ctx: TestContext;

beforeAll(async () => {
  ctx = await createTestContext();
});
afterAll(() => ctx.close());

// A test that fails between setting a fault and clearing it must not leave it for the next one.
afterEach(async () => {
  for (const source of ['mof', 'etax', 'police']) await ctx.sim('/__control/faults', { source, mode: 'none' });
});

const paymentsOf = (invoiceId: string) =>
  ctx.deps.db.selectFrom('payments').select(['id', 'status']).where('invoice_id', '=', invoiceId).orderBy('created_at').execute();

describe('payment lifecycle', () => {
  it('pays, confirms, cancels and pays again', async () => {
    const { partner, invoice } = await partnerWithInvoice(ctx, 'mof', { amount: 12000.5, year: 2025 });
    const { apiKey } = partner;
    const invoiceId = invoice.id;
    const res = await pay(ctx, apiKey, { invoiceId });
    expect(res.statusCode).toBe(201);
    const created = res.json<PaymentCreated>();
    expect(created).toMatchObject({ success: true, status: 'submitted', amount: 12000.5, invoiceId, invoiceIds: [invoiceId] });
    expect(Object.keys(created).sort()).toEqual(['amount', 'id', 'invoiceId', 'invoiceIds', 'partnerReference', 'qrpay', 'status', 'success']);
    expect(created.partnerReference).toBeNull();
    // The PNG's base64 spells random letters ("mOF" in one CI run); what it encodes is qrText,
    // which stays in the checked text and is compared with the decoded image below.
    const withoutImage = JSON.stringify({ ...created, qrpay: created.qrpay && { ...created.qrpay, qrImage: '' } });
    expect(withoutImage).not.toContain(invoice.refNum);
    expect(withoutImage).not.toMatch(/mof|ref_?num/i);

    const qrpay = created.qrpay;
    if (!qrpay) throw new Error('no qrpay in the created payment');
    expect(decodeQrImage(qrpay.qrImage)).toBe(qrpay.qrText);
    expect(qrpay.urls.length).toBeGreaterThan(5);
    for (const link of qrpay.urls) {
      expect(link.link).toContain(encodeURIComponent(qrpay.qrText));
      expect(link.name && link.description && link.logo).toBeTruthy();
    }
    expect(qrpay.shortUrl).toContain(created.id);

    const before = (await getPayment(ctx, apiKey, created.id)).json<Payment>();
    expect(before).toEqual({ id: created.id, status: 'submitted', amount: 12000.5, invoiceId, invoiceIds: [invoiceId], partnerReference: null });

    expect((await approve(ctx, invoice.refNum)).statusCode).toBe(200);
    const confirmed = (await getPayment(ctx, apiKey, created.id)).json<Payment>();
    expect(confirmed.status).toBe('confirmed');
    expect(Number.isNaN(Date.parse(confirmed.paidAt ?? ''))).toBe(false);
    expect((await getInvoice(ctx, apiKey, invoiceId)).status).toBe('paid');

    const events = await ctx.deps.db.selectFrom('events').select(['event', 'payload']).where('partner_id', '=', partner.id).orderBy('created_at').execute();
    expect(events).toEqual([
      { event: 'payment.submitted', payload: { id: created.id, invoiceId, partnerReference: null } },
      { event: 'payment.confirmed', payload: { id: created.id, amount: 12000.5, partnerReference: null } },
    ]);

    const paidAgain = await pay(ctx, apiKey, { invoiceId });
    expect(paidAgain.statusCode).toBe(422);
    expect(paidAgain.json()).toEqual({ success: false, refNum: invoice.refNum, message: 'Invoice is already paid', code: 'invoice_not_payable', requestId: paidAgain.headers['x-request-id'] });

    const canceled = await cancelPayment(ctx, apiKey, created.id);
    expect(canceled.statusCode).toBe(200);
    expect(canceled.json()).toEqual({ id: created.id, canceled: true });
    expect((await getInvoice(ctx, apiKey, invoiceId)).status).toBe('open');
    expect((await getPayment(ctx, apiKey, created.id)).json()).toMatchObject({ status: 'canceled' });
    expect((await cancelPayment(ctx, apiKey, created.id)).statusCode).toBe(409);

    const again = await pay(ctx, apiKey, { invoiceId });
    expect(again.statusCode).toBe(201);
    expect(again.json<PaymentCreated>().id).not.toBe(created.id);
  });

  it('confirms in the background job without a client poll', async () => {
    const { partner, invoice } = await partnerWithInvoice(ctx, 'police', { amount: 50000 });
    const created = await payOk(ctx, partner.apiKey, { invoiceId: invoice.id });
    expect((await approve(ctx, invoice.refNum)).statusCode).toBe(200);
    ctx.advance(ctx.config.confirmPollMs + 1000);
    await ctx.runJobs();
    const row = await ctx.deps.db.selectFrom('payments').select(['status', 'paid_at']).where('id', '=', created.id).executeTakeFirstOrThrow();
    expect(row.status).toBe('confirmed');
    expect(row.paid_at).not.toBeNull();
    expect((await getInvoice(ctx, partner.apiKey, invoice.id)).status).toBe('paid');
  });

  it('covers every invoice the ministry settles together', async () => {
    const p = await ctx.partner();
    const b = await ownInvoice(ctx, p, 'mof', { amount: 2000 });
    const a = await ownInvoice(ctx, p, 'mof', { amount: 3000, linkedRefNums: [b.refNum] });
    const created = await payOk(ctx, p.apiKey, { invoiceId: a.id });
    expect(created.invoiceId).toBe(a.id);
    expect(created.invoiceIds).toEqual([a.id, b.id]);
    expect((await pay(ctx, p.apiKey, { invoiceId: b.id })).statusCode).toBe(422);
    expect((await approve(ctx, a.refNum)).statusCode).toBe(200);
    expect((await getPayment(ctx, p.apiKey, created.id)).json()).toMatchObject({ status: 'confirmed', invoiceIds: [a.id, b.id] });
    expect((await getInvoice(ctx, p.apiKey, a.id)).status).toBe('paid');
    expect((await getInvoice(ctx, p.apiKey, b.id)).status).toBe('paid');
    expect((await cancelPayment(ctx, p.apiKey, created.id)).statusCode).toBe(200);
    expect((await getInvoice(ctx, p.apiKey, b.id)).status).toBe('open');
  });

  it('pays an overdue invoice and a partial amount', async () => {
    const { partner, invoice } = await partnerWithInvoice(ctx, 'mof', { amount: 5000, dueDate: '2024-01-01T00:00:00.000Z', allowPartial: true });
    expect((await getInvoice(ctx, partner.apiKey, invoice.id)).status).toBe('overdue');
    const res = await pay(ctx, partner.apiKey, { invoiceId: invoice.id, amount: 1500.25 });
    expect(res.statusCode).toBe(201);
    expect(res.json<PaymentCreated>()).toMatchObject({ status: 'submitted', amount: 1500.25 });
    expect(await paymentsOf(invoice.id)).toEqual([{ id: res.json<PaymentCreated>().id, status: 'submitted' }]);
  });
});

/** The invoice as the ministry system shows it now, through the service's own adapter. */


const SOURCES: Source[] = ['mof', 'etax', 'police'];

describe('part-payments', () => {
  it.each(SOURCES)('%s: refuses an amount that is not the balance unless the ministry takes part-payments', async (source) => {
    const { partner, invoice } = await partnerWithInvoice(ctx, source, { amount: 1000 });
    const res = await pay(ctx, partner.apiKey, { invoiceId: invoice.id, amount: 0.01 });
    expect(res.statusCode).toBe(422);
    expect(res.json()).toEqual({ success: false, refNum: invoice.refNum, message: 'amount does not match the invoice balance', code: 'amount_not_accepted', requestId: res.headers['x-request-id'] });
    expect((await paymentsOf(invoice.id)).map((p) => p.status)).toEqual(['failed']);
    const atSimulator = (await ctx.simulator.inject({ method: 'GET', url: '/__control/payments' })).json<{ payments: { refNum: string }[] }>();
    expect(atSimulator.payments.filter((p) => p.refNum === invoice.refNum)).toEqual([]);
    expect(await atMinistry(ctx, source, invoice.refNum)).toEqual({ status: 'open', amount: '1000' });
    expect(await getInvoice(ctx, partner.apiKey, invoice.id)).toMatchObject({ status: 'open', amount: 1000 });
    // The whole balance still pays it.
    expect((await pay(ctx, partner.apiKey, { invoiceId: invoice.id })).statusCode).toBe(201);
  });

  it.each(SOURCES)('%s: a confirmed part-payment leaves the invoice open with the balance, and the remainder pays it', async (source) => {
    const { partner, invoice } = await partnerWithInvoice(ctx, source, { amount: 1000, allowPartial: true });
    const part = await payOk(ctx, partner.apiKey, { invoiceId: invoice.id, amount: 300 });
    await approveAndConfirm(ctx, invoice.refNum);
    expect((await getPayment(ctx, partner.apiKey, part.id)).json<Payment>()).toMatchObject({ status: 'confirmed', amount: 300 });
    expect(await atMinistry(ctx, source, invoice.refNum)).toEqual({ status: 'open', amount: '700' });
    expect(await getInvoice(ctx, partner.apiKey, invoice.id)).toMatchObject({ status: 'open', amount: 700 });
    const register = invoice.fixture.payer?.register ?? '';
    const listed = await searchInvoices(ctx, partner.apiKey, `ttd=${encodeURIComponent(register)}`);
    expect(listed.invoices.map((i) => [i.id, i.status, i.amount])).toEqual([[invoice.id, 'open', 700]]);
    expect(await checkInvariants(kyselyRunner(ctx.deps.db))).toEqual([]);

    const rest = await payOk(ctx, partner.apiKey, { invoiceId: invoice.id });
    expect(rest).toMatchObject({ status: 'submitted', amount: 700 });
    await approveAndConfirm(ctx, invoice.refNum);
    expect((await getPayment(ctx, partner.apiKey, rest.id)).json<Payment>()).toMatchObject({ status: 'confirmed', amount: 700 });
    expect(await getInvoice(ctx, partner.apiKey, invoice.id)).toMatchObject({ status: 'paid' });
    expect((await atMinistry(ctx, source, invoice.refNum))?.status).toBe('paid');
    const again = await pay(ctx, partner.apiKey, { invoiceId: invoice.id });
    expect(again.json()).toEqual({ success: false, refNum: invoice.refNum, message: 'Invoice is already paid', code: 'invoice_not_payable', requestId: again.headers['x-request-id'] });
    expect(await checkInvariants(kyselyRunner(ctx.deps.db))).toEqual([]);
  });

  it('settles the linked invoices only with the payment that clears the balance', async () => {
    const p = await ctx.partner();
    const b = await ownInvoice(ctx, p, 'mof', { amount: 2000 });
    const a = await ownInvoice(ctx, p, 'mof', { amount: 3000, allowPartial: true, linkedRefNums: [b.refNum] });
    const part = await payOk(ctx, p.apiKey, { invoiceId: a.id, amount: 1000 });
    expect(part.invoiceIds).toEqual([a.id, b.id]);
    await approveAndConfirm(ctx, a.refNum);
    expect((await getPayment(ctx, p.apiKey, part.id)).json<Payment>().status).toBe('confirmed');
    expect(await getInvoice(ctx, p.apiKey, a.id)).toMatchObject({ status: 'open', amount: 2000 });
    expect(await getInvoice(ctx, p.apiKey, b.id)).toMatchObject({ status: 'open', amount: 2000 });
    expect(await atMinistry(ctx, 'mof', b.refNum)).toEqual({ status: 'open', amount: '2000' });
    expect(await checkInvariants(kyselyRunner(ctx.deps.db))).toEqual([]);

    const rest = await payOk(ctx, p.apiKey, { invoiceId: a.id });
    expect(rest).toMatchObject({ amount: 2000, invoiceIds: [a.id, b.id] });
    await approveAndConfirm(ctx, a.refNum);
    expect((await getInvoice(ctx, p.apiKey, a.id)).status).toBe('paid');
    expect((await getInvoice(ctx, p.apiKey, b.id)).status).toBe('paid');
    expect(await checkInvariants(kyselyRunner(ctx.deps.db))).toEqual([]);
  });

  it('owes a canceled part-payment again: the invoice shows the balance the ministry restored', async () => {
    const { partner, invoice } = await partnerWithInvoice(ctx, 'etax', { amount: 1000, allowPartial: true });
    const part = await payOk(ctx, partner.apiKey, { invoiceId: invoice.id, amount: 250.5 });
    await approveAndConfirm(ctx, invoice.refNum);
    expect(await getInvoice(ctx, partner.apiKey, invoice.id)).toMatchObject({ status: 'open', amount: 749.5 });
    expect((await cancelPayment(ctx, partner.apiKey, part.id)).statusCode).toBe(200);
    expect(await atMinistry(ctx, 'etax', invoice.refNum)).toEqual({ status: 'open', amount: '1000' });
    expect(await getInvoice(ctx, partner.apiKey, invoice.id)).toMatchObject({ status: 'open', amount: 1000 });
    expect(await checkInvariants(kyselyRunner(ctx.deps.db))).toEqual([]);
  });
});

describe('refusals', () => {
  it('answers 422 with the ref number when the ministry refuses, and records a failed payment', async () => {
    const { partner, invoice } = await partnerWithInvoice(ctx, 'mof', { rejectPayment: true });
    const res = await pay(ctx, partner.apiKey, { invoiceId: invoice.id });
    expect(res.statusCode).toBe(422);
    const body = res.json<PaymentFailed>();
    expect(body.success).toBe(false);
    expect(body.refNum).toBe(invoice.refNum);
    expect(body.message.length).toBeGreaterThan(0);
    expect((await paymentsOf(invoice.id)).map((f) => f.status)).toEqual(['failed']);
  });

  it('refuses an invoice paid at the ministry and an amount above the balance', async () => {
    const p = await ctx.partner();
    const paid = await ownInvoice(ctx, p, 'mof', { status: 'paid' });
    const paidAgain = await pay(ctx, p.apiKey, { invoiceId: paid.id });
    expect(paidAgain.json()).toEqual({ success: false, refNum: paid.refNum, message: 'Invoice is already paid', code: 'invoice_not_payable', requestId: paidAgain.headers['x-request-id'] });
    const open = await ownInvoice(ctx, p, 'etax', { amount: 25000.25 });
    const over = await pay(ctx, p.apiKey, { invoiceId: open.id, amount: 25000.26 });
    expect(over.statusCode).toBe(422);
    expect(over.json()).toEqual({ success: false, refNum: open.refNum, message: 'Amount does not match the invoice balance', code: 'amount_not_accepted', requestId: over.headers['x-request-id'] });
  });

  it('validates the body strictly', async () => {
    const { partner, invoice } = await partnerWithInvoice(ctx, 'etax', { amount: 25000.25 });
    const invoiceId = invoice.id;
    const cases: [unknown, string, string][] = [
      [{ invoiceId, extra: 1 }, 'property extra should not exist', '/extra'],
      [{ invoiceId, amount: '100' }, 'amount must be of type number', '/amount'],
      [{ invoiceId: 'nope' }, 'invoiceId must be a UUID', '/invoiceId'],
      [{}, 'property invoiceId is required', '/invoiceId'],
      [{ invoiceId, amount: 10.123 }, 'amount must be a positive number with at most 2 decimals', '/amount'],
    ];
    for (const [payload, message, path] of cases) {
      const res = await pay(ctx, partner.apiKey, payload);
      expect(res.statusCode).toBe(400);
      expect(res.json()).toEqual(badRequest(res, [path, message]));
    }
    const arr = await pay(ctx, partner.apiKey, [{ invoiceId }]);
    expect(arr.statusCode).toBe(400);
    const neg = await pay(ctx, partner.apiKey, { invoiceId, amount: -5 });
    expect(neg.statusCode).toBe(400);
    // Nothing refused reached the ministry or the table.
    expect(await paymentsOf(invoiceId)).toEqual([]);
  });

  it('answers 404 for an unknown invoice or one the partner never retrieved', async () => {
    const { partner, invoice } = await partnerWithInvoice(ctx, 'etax');
    expect((await pay(ctx, partner.apiKey, { invoiceId: '0b8f7a4e-1c2d-4e5f-9a6b-7c8d9e0f1a2b' })).statusCode).toBe(404);
    const other = await ctx.partner();
    expect((await pay(ctx, other.apiKey, { invoiceId: invoice.id })).statusCode).toBe(404);
    expect(await paymentsOf(invoice.id)).toEqual([]);
  });

  it('answers 409 with the status when canceling a failed payment', async () => {
    const { partner, invoice } = await partnerWithInvoice(ctx, 'mof', { rejectPayment: true });
    expect((await pay(ctx, partner.apiKey, { invoiceId: invoice.id })).statusCode).toBe(422);
    const [failed] = await paymentsOf(invoice.id);
    expect(failed?.status).toBe('failed');
    const res = await cancelPayment(ctx, partner.apiKey, failed?.id ?? '');
    expect(res.statusCode).toBe(409);
    expect(res.json()).toEqual({ statusCode: 409, message: 'Payment cannot be canceled in status failed', error: 'Conflict', code: 'illegal_transition', requestId: res.headers['x-request-id'] });
  });
});

describe('isolation', () => {
  it("answers 404 to another partner's payment ids", async () => {
    const { partner, invoice } = await partnerWithInvoice(ctx, 'etax');
    const created = await payOk(ctx, partner.apiKey, { invoiceId: invoice.id });
    const other = await ctx.partner();
    expect((await getPayment(ctx, other.apiKey, created.id)).statusCode).toBe(404);
    expect((await cancelPayment(ctx, other.apiKey, created.id)).statusCode).toBe(404);
    expect((await getPayment(ctx, partner.apiKey, created.id)).statusCode).toBe(200);
    expect((await getPayment(ctx, partner.apiKey, 'bad-id')).statusCode).toBe(400);
    expect((await cancelPayment(ctx, partner.apiKey, created.id)).statusCode).toBe(200);
  });
});

describe('QR standards', () => {
  async function qrFor(standard: 'qrpay' | 'govstd') {
    const { partner, invoice } = await partnerWithInvoice(ctx, 'etax', { amount: 25000.25 }, { qrStandard: standard });
    const created = await payOk(ctx, partner.apiKey, { invoiceId: invoice.id });
    if (!created.qrpay) throw new Error('no qrpay in the created payment');
    return created.qrpay.qrText;
  }

  it('uses merchant template 27 for qrpay and 26 for govstd, with a valid CRC', async () => {
    const qrpay = topLevelTags(await qrFor('qrpay'));
    const govstd = topLevelTags(await qrFor('govstd'));
    expect(qrpay.has('27')).toBe(true);
    expect(qrpay.has('26')).toBe(false);
    expect(govstd.has('26')).toBe(true);
    expect(govstd.has('27')).toBe(false);
    for (const tags of [qrpay, govstd]) {
      expect(tags.get('00')).toBe('01');
      expect(tags.get('01')).toBe('12');
      expect(tags.get('53')).toBe('496');
      expect(tags.get('58')).toBe('MN');
      expect(tags.get('54')).toMatch(/^25000\.25$/);
      expect(tags.has('59') && tags.has('60') && tags.has('62')).toBe(true);
    }
  });

  it('ends every payload with a CRC that an independent implementation agrees with', async () => {
    const text = await qrFor('govstd');
    expect(text.slice(-8, -4)).toBe('6304');
    expect(text.slice(-4)).toBe(referenceCrc16(text.slice(0, -4)));
  });
});

describe('idempotency', () => {
  it('replays the first response with the QR, and refuses a different body with the same key', async () => {
    const { partner, invoice } = await partnerWithInvoice(ctx, 'etax', { amount: 25000.25 });
    const headers = { 'x-idempotency-key': 'idem-1' };
    const first = await pay(ctx, partner.apiKey, { invoiceId: invoice.id }, headers);
    expect(first.statusCode).toBe(201);
    const replay = await pay(ctx, partner.apiKey, { invoiceId: invoice.id }, headers);
    expect(replay.statusCode).toBe(201);
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(replay.json()).toEqual({ ...first.json<PaymentCreated>(), message: 'idempotent' });
    const different = await pay(ctx, partner.apiKey, { invoiceId: invoice.id, amount: 1 }, headers);
    expect(different.statusCode).toBe(422);
    expect(await paymentsOf(invoice.id)).toEqual([{ id: first.json<PaymentCreated>().id, status: 'submitted' }]);
  });

  it('takes Idempotency-Key as X-Idempotency-Key, and refuses both with different values', async () => {
    const { partner, invoice } = await partnerWithInvoice(ctx, 'police');
    const first = await pay(ctx, partner.apiKey, { invoiceId: invoice.id }, { 'idempotency-key': 'ietf-key' });
    expect(first.statusCode, first.body).toBe(201);
    // One key under either name: a retry under the other name, or under both, is the replay.
    const retries: Record<string, string>[] = [{ 'x-idempotency-key': 'ietf-key' }, { 'idempotency-key': 'ietf-key' }, { 'idempotency-key': 'ietf-key', 'x-idempotency-key': 'ietf-key' }];
    for (const headers of retries) {
      const replay = await pay(ctx, partner.apiKey, { invoiceId: invoice.id }, headers);
      expect(replay.statusCode, replay.body).toBe(201);
      expect(replay.headers['idempotent-replayed']).toBe('true');
      expect(replay.json<PaymentCreated>().id).toBe(first.json<PaymentCreated>().id);
    }
    const both = await pay(ctx, partner.apiKey, { invoiceId: invoice.id }, { 'idempotency-key': 'ietf-key', 'x-idempotency-key': 'another-key' });
    expect(both.statusCode).toBe(400);
    expect(both.json<{ message: string }>().message).toContain('Idempotency-Key and X-Idempotency-Key must be equal when both are sent');
    const invalid = await pay(ctx, partner.apiKey, { invoiceId: invoice.id }, { 'idempotency-key': 'with space' });
    expect(invalid.statusCode).toBe(400);
    expect(await paymentsOf(invoice.id)).toEqual([{ id: first.json<PaymentCreated>().id, status: 'submitted' }]);
  });

  it('scopes keys per partner', async () => {
    const { partner: mine, invoice } = await partnerWithInvoice(ctx, 'etax');
    const theirs = await ctx.partner();
    expect((await lookupRef(ctx, theirs.apiKey, invoice.refNum)).id).toBe(invoice.id);
    const headers = { 'x-idempotency-key': 'shared-key' };
    const minePayment = await payOk(ctx, mine.apiKey, { invoiceId: invoice.id }, headers);
    expect((await cancelPayment(ctx, mine.apiKey, minePayment.id)).statusCode).toBe(200);
    const theirPayment = await pay(ctx, theirs.apiKey, { invoiceId: invoice.id }, headers);
    expect(theirPayment.statusCode).toBe(201);
    expect(theirPayment.headers['idempotent-replayed']).toBeUndefined();
    expect(theirPayment.json<PaymentCreated>().id).not.toBe(minePayment.id);
  });

  it('creates exactly one payment for 20 concurrent requests with the same key', async () => {
    const { partner, invoice } = await partnerWithInvoice(ctx, 'etax');
    const headers = { 'x-idempotency-key': 'burst-key' };
    const results = await Promise.all(Array.from({ length: 20 }, () => pay(ctx, partner.apiKey, { invoiceId: invoice.id }, headers)));
    const codes = results.map((r) => r.statusCode);
    expect(codes.every((c) => c === 201 || c === 409)).toBe(true);
    const ids = new Set(results.filter((r) => r.statusCode === 201).map((r) => r.json<PaymentCreated>().id));
    expect(ids.size).toBe(1);
    const rows = await ctx.deps.db.selectFrom('payments').select('id').where('partner_id', '=', partner.id).execute();
    expect(rows.map((r) => r.id)).toEqual([...ids]);
    expect(await checkInvariants(kyselyRunner(ctx.deps.db))).toEqual([]);
  });

  it('lets only one of 20 concurrent payments for one invoice through', async () => {
    const { partner, invoice } = await partnerWithInvoice(ctx, 'etax');
    const results = await Promise.all(Array.from({ length: 20 }, () => pay(ctx, partner.apiKey, { invoiceId: invoice.id })));
    const created = results.filter((r) => r.statusCode === 201);
    expect(created).toHaveLength(1);
    expect(results.filter((r) => r.statusCode === 422)).toHaveLength(19);
    const createdId = created[0]?.json<PaymentCreated>().id as string;
    const active = (await paymentsOf(invoice.id)).filter((p) => ['pending', 'submitted', 'confirmed'].includes(p.status));
    expect(active).toEqual([{ id: createdId, status: 'submitted' }]);
    expect(await checkInvariants(kyselyRunner(ctx.deps.db))).toEqual([]);
    expect((await cancelPayment(ctx, partner.apiKey, createdId)).statusCode).toBe(200);
    expect(await checkInvariants(kyselyRunner(ctx.deps.db))).toEqual([]);
  });
});

describe('upstream failure during payment', () => {
  it('answers 503, leaves the payment pending while its submit may still land, and lets the job fail it when the ministry never saw it', async () => {
    const { partner, invoice } = await partnerWithInvoice(ctx, 'etax');
    await ctx.sim('/__control/faults', { source: 'etax', mode: 'error' });
    const res = await pay(ctx, partner.apiKey, { invoiceId: invoice.id });
    expect(res.statusCode).toBe(503);
    expect(res.json()).toEqual({ statusCode: 503, message: 'Service temporarily unavailable, please retry later', error: 'Service Unavailable', code: 'ministry_unavailable', requestId: res.headers['x-request-id'] });
    await ctx.sim('/__control/faults', { source: 'etax', mode: 'none' });
    const stranded = await paymentsOf(invoice.id);
    expect(stranded.map((p) => p.status)).toEqual(['pending']);
    ctx.advance(60_000);
    await ctx.runJobs();
    expect(await paymentsOf(invoice.id)).toEqual([{ id: stranded[0]?.id, status: 'pending' }]);
    ctx.advance(ctx.config.paymentUnknownOutcomeMs);
    await ctx.runJobs();
    expect(await paymentsOf(invoice.id)).toEqual([{ id: stranded[0]?.id, status: 'failed' }]);
    const retry = await pay(ctx, partner.apiKey, { invoiceId: invoice.id });
    expect(retry.statusCode).toBe(201);
    expect((await paymentsOf(invoice.id)).map((p) => p.status)).toEqual(['failed', 'submitted']);
  });

  it('resumes the same payment when the client retries with its idempotency key', async () => {
    const { partner, invoice } = await partnerWithInvoice(ctx, 'etax');
    const headers = { 'x-idempotency-key': 'retry-after-503' };
    await ctx.sim('/__control/faults', { source: 'etax', mode: 'error' });
    expect((await pay(ctx, partner.apiKey, { invoiceId: invoice.id }, headers)).statusCode).toBe(503);
    await ctx.sim('/__control/faults', { source: 'etax', mode: 'none' });
    const stranded = await paymentsOf(invoice.id);
    expect(stranded.map((p) => p.status)).toEqual(['pending']);
    const retry = await pay(ctx, partner.apiKey, { invoiceId: invoice.id }, headers);
    expect(retry.statusCode).toBe(201);
    // One payment in all: the pending one, now submitted, not a second one beside it.
    expect(await paymentsOf(invoice.id)).toEqual([{ id: retry.json<PaymentCreated>().id, status: 'submitted' }]);
    expect(retry.json<PaymentCreated>().id).toBe(stranded[0]?.id);
  });
});

describe('reports', () => {
  it('lists payments newest first with refNum and source, paged', async () => {
    const p = await ctx.partner();
    const paid: { id: string; refNum: string; source: string }[] = [];
    for (const source of ['mof', 'etax', 'police', 'mof', 'etax', 'police'] as const) {
      const invoice = await ownInvoice(ctx, p, source);
      paid.push({ id: (await payOk(ctx, p.apiKey, { invoiceId: invoice.id })).id, refNum: invoice.refNum, source });
    }
    const key = p.apiKey;
    const res = await ctx.api(key, { method: 'GET', url: '/api/v1/reports/payments?limit=2' });
    expect(res.statusCode).toBe(200);
    const body = res.json<PaymentList>();
    expect(body.page).toBe(1);
    expect(body.limit).toBe(2);
    expect(body.items).toHaveLength(2);
    expect(body.total).toBe(paid.length);
    expect(Date.parse(body.items[0]?.createdAt ?? '')).toBeGreaterThanOrEqual(Date.parse(body.items[1]?.createdAt ?? ''));
    const page2 = (await ctx.api(key, { method: 'GET', url: '/api/v1/reports/payments?limit=2&page=2' })).json<PaymentList>();
    expect(page2.items.length).toBe(2);
    const page3 = (await ctx.api(key, { method: 'GET', url: '/api/v1/reports/payments?limit=2&page=3' })).json<PaymentList>();
    const listed = [...body.items, ...page2.items, ...page3.items];
    // Every payment of the partner exactly once, each with its own refNum and source.
    expect(listed.map((i) => ({ id: i.id, refNum: i.refNum, source: i.source })).sort((x, y) => x.id.localeCompare(y.id))).toEqual(
      [...paid].sort((x, y) => x.id.localeCompare(y.id)),
    );
    const times = listed.map((i) => Date.parse(i.createdAt));
    expect(times).toEqual([...times].sort((x, y) => y - x));
    expect(listed.every((i) => i.partnerId === p.id && i.status === 'submitted')).toBe(true);
    const defaults = (await ctx.api(key, { method: 'GET', url: '/api/v1/reports/payments' })).json<PaymentList>();
    expect(defaults).toMatchObject({ page: 1, limit: 20, total: paid.length });
    expect((await ctx.api(key, { method: 'GET', url: '/api/v1/reports/payments?limit=101' })).statusCode).toBe(400);
    expect((await ctx.api(key, { method: 'GET', url: '/api/v1/reports/payments?page=0' })).statusCode).toBe(400);
  });

  it("summarises the partner's retrieved invoices", async () => {
    // A taxpayer of this test's own: one invoice in each state the summary tells apart.
    const payer = { register: unique('R'), name: 'Тест ХХК' };
    const p = await ctx.partner();
    const cases = [
      { status: 'open', amount: 1000, dueDate: '2099-12-31T00:00:00.000Z' },
      { status: 'open', amount: 250.25, dueDate: null },
      { status: 'open', amount: 2000, dueDate: '2024-01-01T00:00:00.000Z' },
      { status: 'paid', amount: 4000, dueDate: '2099-12-31T00:00:00.000Z' },
    ] as const;
    for (const [i, c] of cases.entries()) await ownInvoice(ctx, p, (['mof', 'etax', 'police'] as const)[i % 3] ?? 'mof', { ...c, payer });
    // Nothing is the partner's before it has been retrieved, and a search retrieves them all again.
    const other = await ctx.partner();
    expect(await summary(ctx, other.apiKey)).toEqual({ total: 0, open: 0, overdue: 0, paid: 0, totalAmountDue: 0 });
    expect((await searchInvoices(ctx, other.apiKey, `ttd=${payer.register}`)).invoices).toHaveLength(cases.length);

    const expected = { total: 4, open: 2, overdue: 1, paid: 1, totalAmountDue: 1000 + 250.25 + 2000 };
    expect(await summary(ctx, p.apiKey)).toEqual(expected);
    expect(await summary(ctx, other.apiKey)).toEqual(expected);
  });

  it("returns the day's settlement restricted to the partner's own payments", async () => {
    const { partner, invoice } = await partnerWithInvoice(ctx, 'mof');
    const key = partner.apiKey;
    const created = await payOk(ctx, key, { invoiceId: invoice.id });
    expect((await approve(ctx, invoice.refNum)).statusCode).toBe(200);
    expect((await getPayment(ctx, key, created.id)).json<Payment>().status).toBe('confirmed');
    const financeDay = new Date(Date.now() + 8 * 3600_000).toISOString().slice(0, 10);
    const res = await ctx.api(key, { method: 'POST', url: '/api/v1/payments/report', payload: { financeDay } });
    expect(res.statusCode).toBe(200);
    const body = res.json<Settlement>();
    expect(body).toMatchObject({ financeDay, success: true });
    expect(body.entries.map((e) => e.refNum)).toEqual([invoice.refNum]);
    expect(body.entries[0]).toMatchObject({ amount: 10000, payerReg: invoice.fixture.payer?.register });
    const other = await ctx.partner();
    const theirs = (await ctx.api(other.apiKey, { method: 'POST', url: '/api/v1/payments/report', payload: { financeDay } })).json<Settlement>();
    expect(theirs.entries).toEqual([]);
    for (const bad of ['2025-02-30', '2025-1-01', 'yesterday', '']) {
      const r = await ctx.api(key, { method: 'POST', url: '/api/v1/payments/report', payload: { financeDay: bad } });
      expect(r.statusCode).toBe(400);
    }
  });
});
