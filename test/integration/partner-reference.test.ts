import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Static } from 'typebox';
import { createTestContext, type TestContext } from '../helpers/test-context.js';
import { receiverPool, type WebhookReceiver } from '../helpers/webhook-receiver.js';
import { approve, cancelPayment, getPayment, partnerWithInvoice, pay, type Partner, type PaymentCreated, type PaymentList, type Settlement } from '../helpers/api.js';
import type { EventBody, EventListBody } from '../../src/schemas/event.schema.js';
import type { Config } from '../../src/config/config.js';

/**
 * The bank's own reference of a payment (X-Partner-Reference on POST /payments): stored with the
 * payment, compared with its idempotency key, and returned as `partnerReference` on the payment,
 * the payment list, its events and webhook deliveries, and its settlement entries.
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

const paymentsOf = (invoiceId: string) =>
  ctx.deps.db.selectFrom('payments').select(['id', 'partner_reference']).where('invoice_id', '=', invoiceId).orderBy('created_at').execute();

async function subscribe(partner: Partner, events: string[]): Promise<WebhookReceiver> {
  const receiver = await receivers.start();
  const res = await ctx.api(partner.apiKey, { method: 'POST', url: '/api/v1/webhooks', payload: { url: receiver.url, secret: SECRET, events } });
  expect(res.statusCode, res.body).toBe(201);
  return receiver;
}

async function events(partner: Partner, query = ''): Promise<Event[]> {
  const res = await ctx.api(partner.apiKey, { method: 'GET', url: `/api/v1/events?${query}` });
  expect(res.statusCode, res.body).toBe(200);
  return res.json<EventList>().items;
}

/** The event bodies a receiver got, as [event, data]. */
const received = (r: WebhookReceiver) => r.received.map((req) => JSON.parse(req.body) as { event: string; data: Record<string, unknown> }).map((b) => [b.event, b.data]);

/** The settlement of today's finance day (the ministry's UTC+8 day). */
async function settlement(partner: Partner): Promise<Settlement> {
  const financeDay = new Date(Date.now() + 8 * 3600_000).toISOString().slice(0, 10);
  const res = await ctx.api(partner.apiKey, { method: 'POST', url: '/api/v1/payments/report', payload: { financeDay } });
  expect(res.statusCode, res.body).toBe(200);
  return res.json<Settlement>();
}

describe('X-Partner-Reference', () => {
  it('is stored with the payment and returned on the POST, the GET, the payment list, the events, the webhooks and the settlement', async () => {
    const { partner, invoice } = await partnerWithInvoice(ctx, 'mof', { amount: 12000.5 });
    const hook = await subscribe(partner, ['payment.submitted', 'payment.confirmed', 'payment.canceled']);
    const reference = 'TXN-2026/11-25#000417~!';

    const res = await pay(ctx, partner.apiKey, { invoiceId: invoice.id }, { 'x-partner-reference': reference });
    expect(res.statusCode, res.body).toBe(201);
    const created = res.json<PaymentCreated>();
    expect(created).toMatchObject({ success: true, id: expect.any(String), status: 'submitted', invoiceId: invoice.id, partnerReference: reference });
    expect(await paymentsOf(invoice.id)).toEqual([{ id: created.id, partner_reference: reference }]);
    expect((await getPayment(ctx, partner.apiKey, created.id)).json()).toEqual({
      id: created.id,
      status: 'submitted',
      amount: 12000.5,
      invoiceId: invoice.id,
      invoiceIds: [invoice.id],
      partnerReference: reference,
    });

    expect((await approve(ctx, invoice.refNum)).statusCode).toBe(200);
    const confirmed = (await getPayment(ctx, partner.apiKey, created.id)).json<{ status: string; partnerReference: string | null }>();
    expect(confirmed).toMatchObject({ status: 'confirmed', partnerReference: reference });

    const list = (await ctx.api(partner.apiKey, { method: 'GET', url: '/api/v1/reports/payments' })).json<PaymentList>();
    expect(list.items).toEqual([
      { id: created.id, refNum: invoice.refNum, status: 'confirmed', amount: 12000.5, source: 'mof', partnerId: partner.id, partnerReference: reference, createdAt: expect.any(String) },
    ]);

    const day = await settlement(partner);
    expect(day.entries).toEqual([
      {
        refNum: invoice.refNum,
        paymentId: created.id,
        partnerReference: reference,
        amount: 12000.5,
        payerReg: expect.any(String),
        payerName: expect.any(String),
        description: expect.any(String),
        date: expect.any(String),
      },
    ]);

    expect((await cancelPayment(ctx, partner.apiKey, created.id)).statusCode).toBe(200);
    await ctx.runJobs();
    await ctx.runJobs();
    const feed = await events(partner, `paymentId=${created.id}`);
    expect(feed.map((e) => [e.type, e.data])).toEqual([
      ['payment.canceled', { id: created.id, invoiceId: invoice.id, reason: 'partner', partnerReference: reference }],
      ['payment.confirmed', { id: created.id, amount: 12000.5, partnerReference: reference }],
      ['payment.submitted', { id: created.id, invoiceId: invoice.id, partnerReference: reference }],
    ]);
    expect(received(hook).sort()).toEqual(feed.map((e) => [e.type, e.data]).sort());
  });

  it('tells apart in the settlement an invoice paid, canceled and paid again', async () => {
    const { partner, invoice } = await partnerWithInvoice(ctx, 'etax', { amount: 3000 });
    const first = await pay(ctx, partner.apiKey, { invoiceId: invoice.id }, { 'x-partner-reference': 'first-try' });
    expect(first.statusCode, first.body).toBe(201);
    expect((await cancelPayment(ctx, partner.apiKey, first.json<PaymentCreated>().id)).statusCode).toBe(200);
    const again = await pay(ctx, partner.apiKey, { invoiceId: invoice.id }, { 'x-partner-reference': 'second-try' });
    expect(again.statusCode, again.body).toBe(201);
    const paid = again.json<PaymentCreated>();
    expect(paid.partnerReference).toBe('second-try');
    expect((await approve(ctx, invoice.refNum)).statusCode).toBe(200);
    expect((await getPayment(ctx, partner.apiKey, paid.id)).json()).toMatchObject({ status: 'confirmed', partnerReference: 'second-try' });

    const day = await settlement(partner);
    expect(day.entries.map((e) => [e.refNum, e.paymentId, e.partnerReference])).toEqual([[invoice.refNum, paid.id, 'second-try']]);
  });

  it('is null wherever a payment was made without it', async () => {
    const { partner, invoice } = await partnerWithInvoice(ctx, 'police', { amount: 5000 });
    const res = await pay(ctx, partner.apiKey, { invoiceId: invoice.id });
    expect(res.statusCode, res.body).toBe(201);
    const created = res.json<PaymentCreated>();
    expect(created.partnerReference).toBeNull();
    expect((await getPayment(ctx, partner.apiKey, created.id)).json()).toMatchObject({ partnerReference: null });
    const list = (await ctx.api(partner.apiKey, { method: 'GET', url: '/api/v1/reports/payments' })).json<PaymentList>();
    expect(list.items.map((i) => [i.id, i.partnerReference])).toEqual([[created.id, null]]);
    expect((await events(partner)).map((e) => e.data)).toEqual([{ id: created.id, invoiceId: invoice.id, partnerReference: null }]);
    expect((await approve(ctx, invoice.refNum)).statusCode).toBe(200);
    expect((await getPayment(ctx, partner.apiKey, created.id)).json()).toMatchObject({ status: 'confirmed', partnerReference: null });
    expect((await settlement(partner)).entries.map((e) => [e.paymentId, e.partnerReference])).toEqual([[created.id, null]]);
  });

  it.each([
    ['65 characters', 'r'.repeat(65)],
    ['a space', 'TXN 1'],
    ['a tab', 'TXN\t1'],
    ['a non-ASCII character', 'TXN-é'],
    ['nothing', ''],
  ])('refuses a reference of %s with 400 and makes no payment', async (_, value) => {
    const { partner, invoice } = await partnerWithInvoice(ctx, 'mof');
    const res = await pay(ctx, partner.apiKey, { invoiceId: invoice.id }, { 'x-partner-reference': value });
    expect(res.statusCode, res.body).toBe(400);
    expect(res.json()).toMatchObject({ statusCode: 400, error: 'Bad Request', code: 'invalid_request' });
    // Said in the header's own terms, never as the schema's regular expression.
    expect(res.json<{ errors: { path: string; message: string }[] }>().errors.filter((e) => e.path === '/x-partner-reference').map((e) => e.message)).toEqual([
      expect.stringMatching(/^(x-partner-reference must be 1-64 printable ASCII characters without spaces|x-partner-reference must NOT have (more than 64|fewer than 1) characters?)$/),
    ]);
    expect(await paymentsOf(invoice.id)).toEqual([]);
  });

  it('takes 64 printable characters', async () => {
    const { partner, invoice } = await partnerWithInvoice(ctx, 'mof');
    const reference = `${'!~'.repeat(31)}Az`;
    const res = await pay(ctx, partner.apiKey, { invoiceId: invoice.id }, { 'x-partner-reference': reference });
    expect(res.statusCode, res.body).toBe(201);
    expect(res.json<PaymentCreated>().partnerReference).toBe(reference);
  });

  it('is part of what an idempotency key is compared on', async () => {
    const { partner, invoice } = await partnerWithInvoice(ctx, 'etax', { amount: 2500 });
    const headers = { 'x-idempotency-key': 'ref-key-1', 'x-partner-reference': 'bank-ref-1' };
    const first = await pay(ctx, partner.apiKey, { invoiceId: invoice.id }, headers);
    expect(first.statusCode, first.body).toBe(201);
    const body = first.json<PaymentCreated>();
    expect(body.partnerReference).toBe('bank-ref-1');

    // The same key and reference: the replay, reference included.
    const replay = await pay(ctx, partner.apiKey, { invoiceId: invoice.id }, headers);
    expect(replay.statusCode, replay.body).toBe(201);
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(replay.json()).toEqual({ ...body, message: 'idempotent' });

    // The same key with another reference, or with none, is another request under the key.
    const others: Record<string, string>[] = [{ 'x-idempotency-key': 'ref-key-1', 'x-partner-reference': 'bank-ref-2' }, { 'x-idempotency-key': 'ref-key-1' }];
    for (const other of others) {
      const reused = await pay(ctx, partner.apiKey, { invoiceId: invoice.id }, other);
      expect(reused.statusCode, reused.body).toBe(422);
      expect(reused.json()).toMatchObject({ statusCode: 422, code: 'idempotency_key_reuse', message: 'Idempotency key was already used with a different request' });
    }
    expect(await paymentsOf(invoice.id)).toEqual([{ id: body.id, partner_reference: 'bank-ref-1' }]);
  });

  it('leaves a key used without a reference as it was: a retry without one replays, one with a reference is refused', async () => {
    const { partner, invoice } = await partnerWithInvoice(ctx, 'police', { amount: 1200 });
    const headers = { 'x-idempotency-key': 'ref-key-2', 'x-user-id': 'user-7' };
    const first = await pay(ctx, partner.apiKey, { invoiceId: invoice.id }, headers);
    expect(first.statusCode, first.body).toBe(201);
    // Hashed exactly as before references existed, so keys stored then still replay.
    const stored = await ctx.deps.db.selectFrom('idempotency_keys').select('request_hash').where('partner_id', '=', partner.id).where('key', '=', 'ref-key-2').executeTakeFirstOrThrow();
    expect(stored.request_hash).toBe(createHash('sha256').update(JSON.stringify([invoice.id, null, 'user-7'])).digest('hex'));
    const replay = await pay(ctx, partner.apiKey, { invoiceId: invoice.id }, headers);
    expect(replay.statusCode, replay.body).toBe(201);
    expect(replay.json()).toEqual({ ...first.json<PaymentCreated>(), partnerReference: null, message: 'idempotent' });
    const withReference = await pay(ctx, partner.apiKey, { invoiceId: invoice.id }, { ...headers, 'x-partner-reference': 'late-ref' });
    expect(withReference.statusCode, withReference.body).toBe(422);
    expect(withReference.json()).toMatchObject({ code: 'idempotency_key_reuse' });
    expect(await paymentsOf(invoice.id)).toEqual([{ id: first.json<PaymentCreated>().id, partner_reference: null }]);
  });
});
