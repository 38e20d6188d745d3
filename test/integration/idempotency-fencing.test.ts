import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LightMyRequestResponse } from 'fastify';
import { createTestContext, type TestContext } from '../helpers/test-context.js';
import { checkInvariants, kyselyRunner } from '../helpers/invariants.js';
import { ownInvoice, pay, partnerWithInvoice, type OwnInvoice, type Partner, type PaymentCreated } from '../helpers/api.js';
import { createIdempotencyRepository, type IdempotencyLease } from '../../src/db/repositories/idempotency.repository.js';
import { createPaymentRepository } from '../../src/payments/payment.repository.js';
import { leasePolicyOf } from '../../src/composition/data.factory.js';

/*
 * A request that stalls past the lease on its idempotency key (a GC pause, a frozen VM, a process
 * under SIGSTOP) and wakes after a retry took the key over must change nothing of the retry's, and
 * answers as the retry did. The stall is made to order: the simulator holds the stalled request's
 * submit on its way to the ministry while the clock moves past the lease and the retry runs.
 */
let ctx: TestContext;
let leaseMs: number;

beforeAll(async () => {
  // A held submit must outlast the test's steps in real time: the adapter's timeout only bounds a hang.
  ctx = await createTestContext({ config: { ministryTimeoutMs: 30_000 } });
  leaseMs = leasePolicyOf(ctx.config).idempotency;
});
afterAll(() => ctx.close());

interface SubmitSeen {
  paymentId: string;
  refNum: string;
  accepted: boolean;
  repeat: boolean;
}

const idempotency = () => createIdempotencyRepository(ctx.deps.db);
const payWithKey = (partner: Partner, key: string, invoice: OwnInvoice) => pay(ctx, partner.apiKey, { invoiceId: invoice.id }, { 'x-idempotency-key': key });

async function submitsOf(refNum: string): Promise<{ submits: SubmitSeen[]; held: { refNum: string; paymentId: string }[] }> {
  const res = await ctx.simulator.inject({ method: 'GET', url: `/__control/submits?refNum=${encodeURIComponent(refNum)}` });
  return res.json();
}

/** Arms the hold on the invoice's next submit and starts the request that will stall on it. */
async function stalledRequest(partner: Partner, key: string, invoice: OwnInvoice, point: 'before' | 'after'): Promise<{ answer: Promise<LightMyRequestResponse>; paymentId: string }> {
  const source = invoice.fixture.source;
  expect((await ctx.sim('/__control/submits/hold', { source, refNum: invoice.refNum, point })).statusCode).toBe(200);
  const answer = payWithKey(partner, key, invoice);
  const deadline = Date.now() + 20_000;
  for (;;) {
    const held = (await submitsOf(invoice.refNum)).held.find((h) => h.refNum === invoice.refNum);
    if (held) return { answer, paymentId: held.paymentId };
    if (Date.now() > deadline) throw new Error(`the submit of ${invoice.refNum} never reached the simulator`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

async function staleWrites(): Promise<number> {
  const metric = await ctx.deps.metrics.staleLeaseWrites.get();
  return metric.values.find((v) => v.labels.work === 'idempotency_key')?.value ?? 0;
}

const releaseSubmit = (invoice: OwnInvoice, fail = false) => ctx.sim('/__control/submits/release', { source: invoice.fixture.source, refNum: invoice.refNum, fail });

async function keyRow(partnerId: string, key: string) {
  return ctx.deps.db.selectFrom('idempotency_keys').selectAll().where('partner_id', '=', partnerId).where('key', '=', key).executeTakeFirstOrThrow();
}

async function paymentsOf(invoiceId: string) {
  return ctx.deps.db.selectFrom('payments').select(['id', 'status']).where('invoice_id', '=', invoiceId).execute();
}

/** A claim at `now` that must win, as its lease. */
async function claimAt(partnerId: string, key: string, requestHash: string, now: Date): Promise<IdempotencyLease & { paymentId: string | null }> {
  const claim = await idempotency().claim({ partnerId, key, requestHash, now, lockUntil: new Date(now.getTime() + leaseMs), expiresAt: new Date(now.getTime() + ctx.config.idempotencyTtlMs) });
  if (claim.kind !== 'claimed') throw new Error(`expected a claim, got ${claim.kind}`);
  return { partnerId, key, token: claim.token, paymentId: claim.paymentId };
}

describe('the lease on an idempotency key', () => {
  it('is taken over only once it has run out, under a new token', async () => {
    const { id: partnerId } = await ctx.partner();
    const t0 = ctx.now();
    const first = await claimAt(partnerId, 'k-lease', 'h1', t0);
    const claimInput = (now: Date) => ({ partnerId, key: 'k-lease', requestHash: 'h1', now, lockUntil: new Date(now.getTime() + leaseMs), expiresAt: new Date(now.getTime() + ctx.config.idempotencyTtlMs) });
    expect(await idempotency().claim(claimInput(new Date(t0.getTime() + leaseMs - 1)))).toEqual({ kind: 'in_flight' });
    const second = await idempotency().claim(claimInput(new Date(t0.getTime() + leaseMs)));
    expect(second).toEqual({ kind: 'claimed', paymentId: null, token: expect.any(String) });
    expect(second.kind === 'claimed' && second.token).not.toBe(first.token);
    expect((await keyRow(partnerId, 'k-lease')).lease_token).toBe(second.kind === 'claimed' ? second.token : null);
  });

  it('lets a stale holder neither store an answer nor give the key back once another request took it over', async () => {
    const { id: partnerId } = await ctx.partner();
    const stale = await claimAt(partnerId, 'k-stale', 'h1', ctx.now());
    ctx.advance(leaseMs + 1);
    const current = await claimAt(partnerId, 'k-stale', 'h1', ctx.now());
    const before = await keyRow(partnerId, 'k-stale');

    expect(await idempotency().complete(stale, 'created', { id: 'stale' })).toBe(false);
    // No payment was made: a release that applied would delete the row, the newer request's claim with it.
    expect(await idempotency().release(stale, ctx.now())).toBe(false);
    expect(await keyRow(partnerId, 'k-stale')).toEqual(before);
    expect(before).toMatchObject({ state: 'in_progress', lease_token: current.token, response_body: null, response_status: null });

    expect(await idempotency().complete(current, 'created', { id: 'current' })).toBe(true);
    expect(await idempotency().release(stale, ctx.now())).toBe(false);
    expect(await idempotency().complete(stale, 'rejected', { id: 'stale' })).toBe(false);
    expect(await keyRow(partnerId, 'k-stale')).toMatchObject({ state: 'completed', response_status: 201, response_body: { id: 'current' } });
    expect(await idempotency().answerFor(partnerId, 'k-stale', 'h1')).toEqual({ kind: 'replay', outcome: 'created', body: { id: 'current' } });
    expect(await idempotency().answerFor(partnerId, 'k-stale', 'other request')).toEqual({ kind: 'in_flight' });
  });

  it('keeps a holder that stalled before its payment from adding one beside the payment of the request that took the key over', async () => {
    const { partner, invoice } = await partnerWithInvoice(ctx, 'etax');
    const other = await ownInvoice(ctx, partner, 'etax');
    const stale = await claimAt(partner.id, 'k-insert', 'h1', ctx.now());
    ctx.advance(leaseMs + 1);
    const current = await claimAt(partner.id, 'k-insert', 'h1', ctx.now());
    expect(current.paymentId).toBeNull();
    const payments = createPaymentRepository(ctx.deps.db, ctx.now);
    const pending = (id: string, invoiceId: string, lease: IdempotencyLease) =>
      payments.insertPending({ id, partnerId: partner.id, invoiceId, source: 'etax', amount: '1', nextCheckAt: ctx.now(), lease, qrText: 'qr' });

    const made = await pending('6f1c1a52-7c51-4a8e-9b6e-3d2f58a1c0a1', invoice.id, current);
    expect(made).toMatchObject({ id: '6f1c1a52-7c51-4a8e-9b6e-3d2f58a1c0a1', status: 'pending' });
    // Another invoice, free to hold: only the token stops the stale holder's payment.
    expect(await pending('6f1c1a52-7c51-4a8e-9b6e-3d2f58a1c0a2', other.id, stale)).toBe('lease_lost');
    expect(await paymentsOf(other.id)).toEqual([]);
    expect(await keyRow(partner.id, 'k-insert')).toMatchObject({ payment_id: '6f1c1a52-7c51-4a8e-9b6e-3d2f58a1c0a1', lease_token: current.token });
  });
});

describe('a request that stalled past its lease', () => {
  it('frozen before the ministry saw its submit: the retry resumes the same payment, the ministry takes one submission, and the stalled request answers with the 201 body the key keeps', async () => {
    const { partner, invoice } = await partnerWithInvoice(ctx, 'mof');
    const stalled = await stalledRequest(partner, 'k-frozen-before', invoice, 'before');
    ctx.advance(leaseMs + 1);

    const retry = await payWithKey(partner, 'k-frozen-before', invoice);
    expect(retry.statusCode, retry.body).toBe(201);
    expect(retry.headers['idempotent-replayed']).toBeUndefined();
    const body = retry.json<PaymentCreated>();
    expect(body).toMatchObject({ id: stalled.paymentId, status: 'submitted' });

    // The stalled request wakes: its submit reaches the ministry, which knows the payment id by now.
    expect((await releaseSubmit(invoice)).statusCode).toBe(200);
    const late = await stalled.answer;
    expect(late.statusCode, late.body).toBe(201);
    expect(late.headers['idempotent-replayed']).toBe('true');
    expect(late.json()).toEqual({ ...body, message: 'idempotent' });

    const replay = await payWithKey(partner, 'k-frozen-before', invoice);
    expect(replay.json()).toEqual(late.json());
    expect(await paymentsOf(invoice.id)).toEqual([{ id: body.id, status: 'submitted' }]);
    const { submits } = await submitsOf(invoice.refNum);
    expect(submits.filter((s) => !s.repeat)).toEqual([expect.objectContaining({ paymentId: body.id, accepted: true })]);
    expect(submits.every((s) => s.paymentId === body.id)).toBe(true);
    expect(await keyRow(partner.id, 'k-frozen-before')).toMatchObject({ state: 'completed', response_status: 201, response_body: body, payment_id: body.id });
    expect(await checkInvariants(kyselyRunner(ctx.deps.db))).toEqual([]);
  });

  it('frozen after the ministry took its submit: one submission, one payment, and both requests answer with the same 201 body', async () => {
    const { partner, invoice } = await partnerWithInvoice(ctx, 'police');
    const stalled = await stalledRequest(partner, 'k-frozen-after', invoice, 'after');
    ctx.advance(leaseMs + 1);

    const retry = await payWithKey(partner, 'k-frozen-after', invoice);
    expect(retry.statusCode, retry.body).toBe(201);
    const body = retry.json<PaymentCreated>();
    expect(body).toMatchObject({ id: stalled.paymentId, status: 'submitted' });

    expect((await releaseSubmit(invoice)).statusCode).toBe(200);
    const late = await stalled.answer;
    expect(late.statusCode, late.body).toBe(201);
    expect(late.json()).toEqual({ ...body, message: 'idempotent' });

    expect(await paymentsOf(invoice.id)).toEqual([{ id: body.id, status: 'submitted' }]);
    const { submits } = await submitsOf(invoice.refNum);
    expect(submits.filter((s) => !s.repeat)).toEqual([expect.objectContaining({ paymentId: body.id, accepted: true })]);
    expect(submits.every((s) => s.paymentId === body.id)).toBe(true);
    expect(await keyRow(partner.id, 'k-frozen-after')).toMatchObject({ state: 'completed', response_body: body });
    expect(await checkInvariants(kyselyRunner(ctx.deps.db))).toEqual([]);
  });

  it('answers 409 while the request that took its key over is still at work, and stores nothing', async () => {
    const { partner, invoice } = await partnerWithInvoice(ctx, 'etax');
    const stalled = await stalledRequest(partner, 'k-new-holder-busy', invoice, 'before');
    ctx.advance(leaseMs + 1);
    const before = await keyRow(partner.id, 'k-new-holder-busy');
    const current = await claimAt(partner.id, 'k-new-holder-busy', before.request_hash, ctx.now());
    expect(current.paymentId).toBe(stalled.paymentId);

    // The new holder keeps the confirmation job off the payment while it submits it; the stalled one cannot.
    const payments = createPaymentRepository(ctx.deps.db, ctx.now);
    const check = async () => (await ctx.deps.db.selectFrom('payments').select('next_check_at').where('id', '=', stalled.paymentId).executeTakeFirstOrThrow()).next_check_at?.getTime();
    expect(await check()).toBeLessThanOrEqual(ctx.now().getTime());
    const until = new Date(ctx.now().getTime() + leaseMs);
    const stale: IdempotencyLease = { partnerId: partner.id, key: 'k-new-holder-busy', token: before.lease_token ?? '' };
    expect(await payments.holdPendingForKey(stalled.paymentId, stale, until)).toBe('lease_lost');
    expect(await check()).toBeLessThanOrEqual(ctx.now().getTime());
    expect(await payments.holdPendingForKey(stalled.paymentId, current, until)).toBe('held');
    expect(await check()).toBe(until.getTime());
    // The ministry has not seen the payment: a check now would end it as never received.
    await ctx.runJobs();
    expect(await paymentsOf(invoice.id)).toEqual([{ id: stalled.paymentId, status: 'pending' }]);
    const taken = await keyRow(partner.id, 'k-new-holder-busy');
    const staleBefore = await staleWrites();

    expect((await releaseSubmit(invoice)).statusCode).toBe(200);
    const late = await stalled.answer;
    expect(late.statusCode, late.body).toBe(409);
    expect(late.json<{ message: string }>().message).toBe('A request with this idempotency key is still in progress');
    expect(await keyRow(partner.id, 'k-new-holder-busy')).toEqual(taken);
    expect(taken).toMatchObject({ state: 'in_progress', response_body: null, lease_token: current.token });
    expect(await staleWrites()).toBe(staleBefore + 1);
  });

  it('whose submit then fails leaves the key to the request that took it over, and answers with that one\'s 201 body', async () => {
    const { partner, invoice } = await partnerWithInvoice(ctx, 'mof');
    const stalled = await stalledRequest(partner, 'k-late-failure', invoice, 'before');
    ctx.advance(leaseMs + 1);
    const retry = await payWithKey(partner, 'k-late-failure', invoice);
    expect(retry.statusCode, retry.body).toBe(201);
    const body = retry.json<PaymentCreated>();
    expect(body.id).toBe(stalled.paymentId);
    const completed = await keyRow(partner.id, 'k-late-failure');

    // The ministry breaks off the stalled submit: a holder would give its key back for a retry.
    expect((await releaseSubmit(invoice, true)).statusCode).toBe(200);
    const late = await stalled.answer;
    expect(late.statusCode, late.body).toBe(201);
    expect(late.json()).toEqual({ ...body, message: 'idempotent' });
    expect(await keyRow(partner.id, 'k-late-failure')).toEqual(completed);
    expect((await submitsOf(invoice.refNum)).submits).toEqual([expect.objectContaining({ paymentId: body.id, repeat: false })]);
  });

  it('whose submit reaches the ministry after the wait ended its payment as never received has it canceled there', async () => {
    const { partner, invoice } = await partnerWithInvoice(ctx, 'etax');
    const stalled = await stalledRequest(partner, 'k-never-received', invoice, 'before');
    ctx.advance(leaseMs + 1);
    // Nobody retried: the ministry has no such payment yet, and its submit may still be on its way.
    await ctx.runJobs();
    expect(await paymentsOf(invoice.id)).toEqual([{ id: stalled.paymentId, status: 'pending' }]);
    // Still none at the end of the wait: the check ends it, owing its cancellation to the ministry.
    ctx.advance(ctx.config.paymentUnknownOutcomeMs);
    await ctx.runJobs();
    expect(await paymentsOf(invoice.id)).toEqual([{ id: stalled.paymentId, status: 'failed' }]);

    expect((await releaseSubmit(invoice)).statusCode).toBe(200);
    const late = await stalled.answer;
    expect(late.statusCode, late.body).toBe(422);
    expect(await paymentsOf(invoice.id)).toEqual([{ id: stalled.paymentId, status: 'failed' }]);
    const atMinistry = (await ctx.simulator.inject({ method: 'GET', url: '/__control/payments' })).json<{ payments: { paymentId: string; status: string }[] }>();
    expect(atMinistry.payments.filter((p) => p.paymentId === stalled.paymentId)).toEqual([expect.objectContaining({ status: 'canceled' })]);
    const owed = await ctx.deps.db.selectFrom('ministry_cancellations').select(['done_at']).where('payment_id', '=', stalled.paymentId).executeTakeFirstOrThrow();
    expect(owed.done_at).not.toBeNull();
  });
});
