import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Static } from 'typebox';
import { createTestContext, type TestContext } from '../helpers/test-context.js';
import { checkInvariants, kyselyRunner } from '../helpers/invariants.js';
import { receiverPool, type WebhookReceiver } from '../helpers/webhook-receiver.js';
import { cancelPayment, partnerWithInvoice, pay, payOk, type Partner } from '../helpers/api.js';
import type { EventBody, EventListBody } from '../../src/schemas/event.schema.js';
import type { Config } from '../../src/config/config.js';

/**
 * Every end of an accepted payment is told to its partner: `payment.failed` when the ministry
 * rejects or loses it, `payment.canceled` with who canceled it. Each once, to the webhooks
 * subscribed to it and in the events API; never for a payment refused with the 422 of its creation.
 */
type Event = Static<typeof EventBody>;
type EventList = Static<typeof EventListBody>;

const SECRET = 'whsec_0123456789abcdef';
const deliveryConfig: Partial<Config> = { webhookRetryScheduleMs: [0, 60_000], webhookTimeoutMs: 1000 };

let ctx: TestContext;
const receivers = receiverPool();

beforeAll(async () => {
  ctx = await createTestContext({ config: deliveryConfig });
});
afterAll(async () => {
  await ctx.close();
  await receivers.closeAll();
});

/** The confirmation job alone, one pass and everything it handed off. */
async function confirmationPass(): Promise<void> {
  const job = ctx.deps.jobs.find((j) => j.name === 'payment-confirmation');
  if (!job) throw new Error('no confirmation job');
  await job.run();
  await job.drain?.();
}

async function subscribe(partner: Partner, events: string[]): Promise<WebhookReceiver> {
  const receiver = await receivers.start();
  const res = await ctx.api(partner.apiKey, { method: 'POST', url: '/api/v1/webhooks', payload: { url: receiver.url, secret: SECRET, events } });
  expect(res.statusCode, res.body).toBe(201);
  return receiver;
}

async function events(partner: Partner, query: string): Promise<Event[]> {
  const res = await ctx.api(partner.apiKey, { method: 'GET', url: `/api/v1/events?${query}` });
  expect(res.statusCode, res.body).toBe(200);
  return res.json<EventList>().items;
}

/** The event bodies a receiver got, as [event, data]. */
const received = (r: WebhookReceiver) => r.received.map((req) => JSON.parse(req.body) as { event: string; data: Record<string, unknown> }).map((b) => [b.event, b.data]);

/** A partner with a webhook for the end events, one for the others, and its submitted payment. */
async function submittedPayment(source: 'mof' | 'etax' | 'police' = 'etax') {
  const { partner, invoice } = await partnerWithInvoice(ctx, source);
  const ends = await subscribe(partner, ['payment.failed', 'payment.canceled']);
  const others = await subscribe(partner, ['payment.submitted', 'payment.confirmed']);
  const payment = await payOk(ctx, partner.apiKey, { invoiceId: invoice.id });
  expect(payment.status).toBe('submitted');
  return { partner, invoice, payment, ends, others };
}

async function statusEvent(paymentId: string) {
  return ctx.deps.db.selectFrom('payments').select(['status', 'status_event']).where('id', '=', paymentId).executeTakeFirstOrThrow();
}

/** Exactly one end event of the payment, listed, filtered and fetched by id as the webhook carried it. */
async function expectOneEnd(s: Awaited<ReturnType<typeof submittedPayment>>, type: 'payment.failed' | 'payment.canceled', data: Record<string, unknown>) {
  // A second pass of every job adds nothing: the end is announced once.
  await ctx.runJobs();
  await ctx.runJobs();
  const all = await events(s.partner, `paymentId=${s.payment.id}`);
  expect(all.map((e) => [e.type, e.data])).toEqual([
    [type, data],
    ['payment.submitted', { id: s.payment.id, invoiceId: s.invoice.id, partnerReference: null }],
  ]);
  expect(await events(s.partner, `paymentId=${s.payment.id}&type=${type}`)).toEqual([all[0]]);
  const one = await ctx.api(s.partner.apiKey, { method: 'GET', url: `/api/v1/events/${all[0]?.id}` });
  expect(one.json()).toEqual(all[0]);
  expect(received(s.ends)).toEqual([[type, data]]);
  expect(s.ends.received[0]?.headers['webhook-id']).toBe(all[0]?.id);
  expect(received(s.others)).toEqual([['payment.submitted', { id: s.payment.id, invoiceId: s.invoice.id, partnerReference: null }]]);
  expect(await checkInvariants(kyselyRunner(ctx.deps.db))).toEqual([]);
}

/** Moves the clock to the payment's next status check and runs the confirmation pass that makes it. */
async function checkWhenDue(paymentId: string): Promise<void> {
  const due = await ctx.deps.db.selectFrom('payments').select('next_check_at').where('id', '=', paymentId).executeTakeFirstOrThrow();
  ctx.advance(Math.max(0, (due.next_check_at?.getTime() ?? 0) - ctx.now().getTime()) + 1);
  await confirmationPass();
}

describe('payment.failed', () => {
  it.each([
    ['rejected', 'ministry_rejected'],
    ['unknown', 'ministry_forgot'],
  ])('is sent once when the ministry answers "%s" for a submitted payment', async (outcome, move) => {
    const s = await submittedPayment();
    expect((await ctx.sim('/__control/payments/outcome', { refNum: s.invoice.refNum, outcome })).statusCode).toBe(200);
    await confirmationPass();
    expect(await statusEvent(s.payment.id)).toEqual({ status: 'failed', status_event: move });
    await expectOneEnd(s, 'payment.failed', { id: s.payment.id, invoiceId: s.invoice.id, partnerReference: null });
  });

  it('is never sent for a payment refused with the 422 of its creation', async () => {
    const { partner, invoice } = await partnerWithInvoice(ctx, 'mof', { rejectPayment: true });
    const all = await subscribe(partner, ['payment.submitted', 'payment.confirmed', 'payment.failed', 'payment.canceled']);
    const res = await pay(ctx, partner.apiKey, { invoiceId: invoice.id });
    expect(res.statusCode).toBe(422);
    const stored = await ctx.deps.db.selectFrom('payments').select('status').where('invoice_id', '=', invoice.id).execute();
    expect(stored).toEqual([{ status: 'failed' }]);
    await ctx.runJobs();
    expect(await events(partner, '')).toEqual([]);
    expect(all.received).toEqual([]);
  });
});

describe('payment.canceled', () => {
  it("says reason partner for the partner's DELETE", async () => {
    const s = await submittedPayment('mof');
    const res = await cancelPayment(ctx, s.partner.apiKey, s.payment.id);
    expect(res.statusCode, res.body).toBe(200);
    expect(await statusEvent(s.payment.id)).toEqual({ status: 'canceled', status_event: 'partner_canceled' });
    await expectOneEnd(s, 'payment.canceled', { id: s.payment.id, invoiceId: s.invoice.id, reason: 'partner', partnerReference: null });
  });

  it('says reason ministry when the ministry canceled it', async () => {
    const s = await submittedPayment();
    expect((await ctx.sim('/__control/payments/outcome', { refNum: s.invoice.refNum, outcome: 'canceled' })).statusCode).toBe(200);
    await confirmationPass();
    expect(await statusEvent(s.payment.id)).toEqual({ status: 'canceled', status_event: 'ministry_canceled' });
    await expectOneEnd(s, 'payment.canceled', { id: s.payment.id, invoiceId: s.invoice.id, reason: 'ministry', partnerReference: null });
  });

  it('says reason expired when the payment expired unpaid', async () => {
    const s = await submittedPayment('police');
    ctx.advance(ctx.config.paymentExpiryMs + 1);
    await confirmationPass();
    expect(await statusEvent(s.payment.id)).toEqual({ status: 'canceled', status_event: 'expired' });
    const intent = await ctx.deps.db.selectFrom('ministry_cancellations').selectAll().where('payment_id', '=', s.payment.id).executeTakeFirstOrThrow();
    expect(intent).toMatchObject({ kind: 'expiry', last_error: null });
    expect(intent.done_at).not.toBeNull();
    await expectOneEnd(s, 'payment.canceled', { id: s.payment.id, invoiceId: s.invoice.id, reason: 'expired', partnerReference: null });
  });
});

describe("an expiry's cancel is recorded before the ministry is asked", () => {
  /** Expires the payment while the ministry refuses cancels: the intent stays open, the payment submitted. */
  async function expireWhileCancelsFail(s: Awaited<ReturnType<typeof submittedPayment>>) {
    expect((await ctx.sim('/__control/faults', { source: 'etax', mode: 'error', operation: 'cancel' })).statusCode).toBe(200);
    ctx.advance(ctx.config.paymentExpiryMs + 1);
    await confirmationPass();
    const intent = await ctx.deps.db.selectFrom('ministry_cancellations').selectAll().where('payment_id', '=', s.payment.id).executeTakeFirstOrThrow();
    expect(intent).toMatchObject({ kind: 'expiry', done_at: null });
    expect(intent.last_error).not.toBeNull();
    expect(await statusEvent(s.payment.id)).toMatchObject({ status: 'submitted' });
    await ctx.runJobs();
    expect(await events(s.partner, `paymentId=${s.payment.id}&type=payment.canceled`)).toEqual([]);
    return intent;
  }

  it('is finished by the job as an expiry once the ministry takes it', async () => {
    const s = await submittedPayment();
    try {
      const intent = await expireWhileCancelsFail(s);
      await ctx.sim('/__control/faults', { source: 'etax', mode: 'none' });
      ctx.advance(intent.next_attempt_at.getTime() - ctx.now().getTime() + 1);
      await confirmationPass();
    } finally {
      await ctx.sim('/__control/faults', { source: 'etax', mode: 'none' });
    }
    expect(await statusEvent(s.payment.id)).toEqual({ status: 'canceled', status_event: 'expired' });
    const done = await ctx.deps.db.selectFrom('ministry_cancellations').select('done_at').where('payment_id', '=', s.payment.id).executeTakeFirstOrThrow();
    expect(done.done_at).not.toBeNull();
    await expectOneEnd(s, 'payment.canceled', { id: s.payment.id, invoiceId: s.invoice.id, reason: 'expired', partnerReference: null });
  });

  it('stays an expiry when the ministry canceled it before the service recorded it (a crash between the two)', async () => {
    const s = await submittedPayment();
    try {
      await expireWhileCancelsFail(s);
      // The cancel reached the ministry, and the process died before it recorded the answer.
      expect((await ctx.sim('/__control/payments/outcome', { refNum: s.invoice.refNum, outcome: 'canceled' })).statusCode).toBe(200);
    } finally {
      await ctx.sim('/__control/faults', { source: 'etax', mode: 'none' });
    }
    // The status check sees the ministry's cancel first: the open intent says whose it was.
    await checkWhenDue(s.payment.id);
    expect(await statusEvent(s.payment.id)).toEqual({ status: 'canceled', status_event: 'expired' });
    await expectOneEnd(s, 'payment.canceled', { id: s.payment.id, invoiceId: s.invoice.id, reason: 'expired', partnerReference: null });
  });

  it("leaves a partner's cancel the ministry made before the service recorded it a partner's cancel", async () => {
    const s = await submittedPayment();
    expect((await ctx.sim('/__control/faults', { source: 'etax', mode: 'error', operation: 'cancel' })).statusCode).toBe(200);
    try {
      expect((await cancelPayment(ctx, s.partner.apiKey, s.payment.id)).statusCode).toBe(503);
      expect((await ctx.sim('/__control/payments/outcome', { refNum: s.invoice.refNum, outcome: 'canceled' })).statusCode).toBe(200);
    } finally {
      await ctx.sim('/__control/faults', { source: 'etax', mode: 'none' });
    }
    await checkWhenDue(s.payment.id);
    expect(await statusEvent(s.payment.id)).toEqual({ status: 'canceled', status_event: 'partner_canceled' });
    await expectOneEnd(s, 'payment.canceled', { id: s.payment.id, invoiceId: s.invoice.id, reason: 'partner', partnerReference: null });
  });
});

describe('subscribing to the end events', () => {
  it('registers and updates a webhook with them, and still refuses an unknown name', async () => {
    const { apiKey } = await ctx.partner();
    const created = await ctx.api(apiKey, {
      method: 'POST',
      url: '/api/v1/webhooks',
      payload: { url: 'https://hooks.example.com/ends', secret: SECRET, events: ['payment.failed', 'payment.canceled'] },
    });
    expect(created.statusCode, created.body).toBe(201);
    const { id, events: subscribed } = created.json<{ id: string; events: string[] }>();
    expect(subscribed).toEqual(['payment.failed', 'payment.canceled']);

    const patched = await ctx.api(apiKey, { method: 'PATCH', url: `/api/v1/webhooks/${id}`, payload: { events: ['payment.submitted', 'payment.canceled'] } });
    expect(patched.statusCode, patched.body).toBe(200);
    expect(patched.json<{ events: string[] }>().events).toEqual(['payment.submitted', 'payment.canceled']);

    const all = ['payment.submitted', 'payment.confirmed', 'payment.failed', 'payment.canceled'];
    expect((await ctx.api(apiKey, { method: 'PATCH', url: `/api/v1/webhooks/${id}`, payload: { events: all } })).statusCode).toBe(200);
    expect((await ctx.api(apiKey, { method: 'PATCH', url: `/api/v1/webhooks/${id}`, payload: { events: ['payment.expired'] } })).statusCode).toBe(400);
    const unknown = await ctx.api(apiKey, {
      method: 'POST',
      url: '/api/v1/webhooks',
      payload: { url: 'https://hooks.example.com/x', secret: SECRET, events: ['payment.canceled', 'payment.refunded'] },
    });
    expect(unknown.statusCode).toBe(400);
    expect((await ctx.api(apiKey, { method: 'GET', url: `/api/v1/events?type=payment.refunded` })).statusCode).toBe(400);
  });
});
