import { createServer, type Server } from 'node:http';
import { unitOfWorkRunner } from '../../src/db/unit-of-work.js';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestContext, type TestContext } from '../helpers/test-context.js';
import { approve, getPayment, ownInvoice, payOk, type Partner, type Payment } from '../helpers/api.js';
import { unique } from '../helpers/own-invoice.js';
import { testConfig } from '../helpers/test-config.js';
import { createEventRepository } from '../../src/db/repositories/event.repository.js';
import { createPushDeliveryRepository, type ClaimedPush } from '../../src/db/repositories/push-delivery.repository.js';

/** A local stand-in for FCM HTTP v1: records every message; answers with the scripted statuses, then 200. */
function fakeFcm() {
  const received: { token: string; authorization: string; data: Record<string, string> }[] = [];
  const script: number[] = [];
  const server: Server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      const { message } = JSON.parse(body) as { message: { token: string; data: Record<string, string> } };
      received.push({ token: message.token, authorization: req.headers.authorization ?? '', data: message.data });
      const status = script.shift() ?? 200;
      res.writeHead(status, { 'content-type': 'application/json' }).end(status === 200 ? '{"name":"projects/demo/messages/1"}' : '{"error":{}}');
    });
  });
  return { server, received, script };
}

const fcm = fakeFcm();
let ctx: TestContext;

beforeAll(async () => {
  await new Promise<void>((resolve) => fcm.server.listen(0, '127.0.0.1', resolve));
  const endpoint = `http://127.0.0.1:${(fcm.server.address() as AddressInfo).port}`;
  ctx = await createTestContext({ config: { fcm: { projectId: 'demo-project', accessToken: 'fake-access-token', endpoint }, webhookRetryScheduleMs: [0, 1000] } });
});
afterAll(async () => {
  await ctx?.close();
  await new Promise<void>((resolve) => fcm.server.close(() => resolve()));
});

async function device(partner: Partner, userId: string): Promise<string> {
  const fcmToken = unique('fcm-token');
  const res = await ctx.api(partner.apiKey, { method: 'POST', url: '/api/v1/devices', payload: { userId, fcmToken, platform: 'android' } });
  expect(res.statusCode, res.body).toBe(201);
  return fcmToken;
}

/** A payment of the partner's own invoice, made with these headers, approved and confirmed by a job pass. */
async function confirmedPayment(partner: Partner, headers: Record<string, string>): Promise<string> {
  const invoice = await ownInvoice(ctx, partner, 'mof');
  const payment = await payOk(ctx, partner.apiKey, { invoiceId: invoice.id }, headers);
  await approve(ctx, invoice.refNum);
  await ctx.runJobs();
  expect((await getPayment(ctx, partner.apiKey, payment.id)).json<Payment>().status).toBe('confirmed');
  return payment.id;
}

const tokensFor = (paymentId: string) => fcm.received.filter((m) => m.data.paymentId === paymentId).map((m) => m.token).sort();

describe('push to the end user when a payment is confirmed', () => {
  it("reaches each of the user's devices once, and never another partner's or another user's", async () => {
    const bank = await ctx.partner();
    const other = await ctx.partner();
    const userId = unique('user');
    const mine = [await device(bank, userId), await device(bank, userId)];
    await device(bank, unique('someone-else'));
    await device(other, userId);

    const paymentId = await confirmedPayment(bank, { 'x-user-id': userId });
    await ctx.runJobs();
    expect(tokensFor(paymentId)).toEqual(mine.sort());
    const sent = fcm.received.filter((m) => m.data.paymentId === paymentId);
    expect(sent.every((m) => m.authorization === 'Bearer fake-access-token' && m.data.event === 'payment.confirmed')).toBe(true);
  });

  it('pushes nothing for a payment made without X-User-Id', async () => {
    const bank = await ctx.partner();
    await device(bank, unique('user'));
    const before = fcm.received.length;
    const paymentId = await confirmedPayment(bank, {});
    await ctx.runJobs();
    expect(tokensFor(paymentId)).toEqual([]);
    expect(fcm.received.length).toBe(before);
  });

  it('retries a push FCM refused on the webhook schedule, without holding back the confirmation', async () => {
    const bank = await ctx.partner();
    const userId = unique('user');
    const token = await device(bank, userId);
    fcm.script.push(503);
    const paymentId = await confirmedPayment(bank, { 'x-user-id': userId });
    expect(tokensFor(paymentId)).toEqual([token]);
    ctx.advance(1500);
    await ctx.runJobs();
    expect(tokensFor(paymentId)).toEqual([token, token]);
    ctx.advance(10_000);
    await ctx.runJobs();
    expect(tokensFor(paymentId)).toEqual([token, token]);
  });

  it('treats another X-User-Id under the same idempotency key as another request', async () => {
    const bank = await ctx.partner();
    const invoice = await ownInvoice(ctx, bank, 'mof');
    const headers = { 'x-idempotency-key': unique('idem'), 'x-user-id': 'user-a' };
    await payOk(ctx, bank.apiKey, { invoiceId: invoice.id }, headers);
    const again = await ctx.api(bank.apiKey, { method: 'POST', url: '/api/v1/payments', payload: { invoiceId: invoice.id }, headers: { ...headers, 'x-user-id': 'user-b' } });
    expect(again.statusCode).toBe(422);
    const replay = await ctx.api(bank.apiKey, { method: 'POST', url: '/api/v1/payments', payload: { invoiceId: invoice.id }, headers });
    expect(replay.statusCode).toBe(201);
    expect(replay.headers['idempotent-replayed']).toBe('true');
  });

  it('refuses an X-User-Id that is not printable ASCII', async () => {
    const bank = await ctx.partner();
    const invoice = await ownInvoice(ctx, bank, 'mof');
    const res = await ctx.api(bank.apiKey, { method: 'POST', url: '/api/v1/payments', payload: { invoiceId: invoice.id }, headers: { 'x-user-id': 'a b' } });
    expect(res.statusCode).toBe(400);
  });
});

describe('push claims', () => {
  /**
   * Pushes of a fresh partner due at `dueAt`, long past: a claim made "at" that time sees only
   * these, whatever the other cases left queued.
   */
  async function queuedPushes(n: number, dueAt: Date): Promise<string[]> {
    const bank = await ctx.partner();
    const userId = unique('user');
    await device(bank, userId);
    const { id: deviceId } = await ctx.deps.db.selectFrom('devices').select('id').where('partner_id', '=', bank.id).executeTakeFirstOrThrow();
    const ids: string[] = [];
    for (let i = 0; i < n; i++) {
      const eventId = await unitOfWorkRunner(ctx.deps.db)((uow) => createEventRepository().append(uow, bank.id, { event: 'payment.submitted', data: { id: unique('pay'), invoiceId: 'inv' } }));
      const row = await ctx.deps.db
        .insertInto('push_deliveries')
        .values({ event_id: eventId, partner_id: bank.id, device_id: deviceId, status: 'pending', next_attempt_at: dueAt })
        .returning('id')
        .executeTakeFirstOrThrow();
      ids.push(row.id);
    }
    return ids;
  }

  const pushRow = (id: string) => ctx.deps.db.selectFrom('push_deliveries').select(['status', 'attempts', 'next_attempt_at', 'last_error']).where('id', '=', id).executeTakeFirstOrThrow();
  const later = (at: Date, ms: number) => new Date(at.getTime() + ms);

  it("keeps a stale attempt's result from overwriting a newer attempt's", async () => {
    const repo = createPushDeliveryRepository(ctx.deps.db);
    const t0 = new Date('2000-01-01T00:00:00Z');
    const [id] = await queuedPushes(1, t0);
    const limits = { total: 1, perPartner: 1 };
    const [first] = await repo.claimDue(t0, later(t0, 1000), limits);
    // The first holder's lease runs out and another claims the push.
    const t1 = later(t0, 1001);
    const [second] = await repo.claimDue(t1, later(t1, 60_000), limits);
    if (!id || !first || !second) throw new Error('claims missing');
    expect([first.id, first.attempt, second.id, second.attempt]).toEqual([id, 1, id, 2]);

    expect(await repo.finish(second, { delivered: true }, t1)).toBe(true);
    expect(await repo.finish(first, { delivered: false, error: 'late failure', nextAttemptAt: t1 }, t1)).toBe(false);
    expect(await pushRow(id)).toMatchObject({ status: 'delivered', attempts: 2, last_error: null });
  });

  // PGlite has one connection: a transaction holding a row lock leaves no other to claim with.
  it.skipIf(!testConfig().databaseUrl)('skips a push another transaction has locked instead of waiting for it', { tags: ['postgres'] }, async () => {
    const repo = createPushDeliveryRepository(ctx.deps.db);
    const t0 = new Date('2001-01-01T00:00:00Z');
    const [held, free] = await queuedPushes(2, t0);
    if (!held || !free) throw new Error('pushes missing');
    let claimed: ClaimedPush[] = [];
    await ctx.deps.db.transaction().execute(async (trx) => {
      await trx.selectFrom('push_deliveries').select('id').where('id', '=', held).forUpdate().execute();
      // Outside the transaction, on another connection: without SKIP LOCKED this waits on the lock forever.
      claimed = await repo.claimDue(t0, later(t0, 1000), { total: 2, perPartner: 2 });
    });
    expect(claimed.map((c) => c.id)).toEqual([free]);
    for (const c of claimed) await repo.finish(c, { delivered: true }, t0);
    const [again] = await repo.claimDue(t0, later(t0, 1000), { total: 2, perPartner: 2 });
    if (!again) throw new Error('the unlocked push was not claimed');
    expect(again.id).toBe(held);
    await repo.finish(again, { delivered: true }, t0);
  });
});
