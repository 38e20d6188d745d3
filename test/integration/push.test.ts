import { unitOfWorkRunner } from '../../src/db/unit-of-work.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestContext, type TestContext } from '../helpers/test-context.js';
import { approve, getPayment, ownInvoice, payOk, type Partner, type Payment } from '../helpers/api.js';
import { unique } from '../helpers/own-invoice.js';
import { testConfig } from '../helpers/test-config.js';
import { startFakeFcm, type FakeFcm } from '../helpers/fake-fcm.js';
import { createOutbox } from '../../src/db/outbox.statements.js';
import { createPushDeliveryRepository, type ClaimedPush } from '../../src/db/repositories/push-delivery.repository.js';

let ctx: TestContext;
let fcm: FakeFcm;

beforeAll(async () => {
  // The fake judges access tokens on the service's clock.
  fcm = await startFakeFcm({ now: () => ctx.now(), staticTokens: ['fake-access-token'] });
  ctx = await createTestContext({
    config: { fcm: { projectId: 'demo-project', accessToken: 'fake-access-token', serviceAccountFile: null, endpoint: fcm.endpoint }, webhookRetryScheduleMs: [0, 1000] },
  });
});
afterAll(async () => {
  await ctx?.close();
  await fcm?.close();
});

async function device(partner: Partner, userId: string, on: TestContext = ctx): Promise<string> {
  const fcmToken = unique('fcm-token');
  const res = await on.api(partner.apiKey, { method: 'POST', url: '/api/v1/devices', payload: { userId, fcmToken, platform: 'android' } });
  expect(res.statusCode, res.body).toBe(201);
  return fcmToken;
}

/** A payment of the partner's own invoice, made with these headers, approved and confirmed by a job pass. */
async function confirmedPayment(partner: Partner, headers: Record<string, string>, on: TestContext = ctx): Promise<string> {
  const invoice = await ownInvoice(on, partner, 'mof');
  const payment = await payOk(on, partner.apiKey, { invoiceId: invoice.id }, headers);
  await approve(on, invoice.refNum);
  await on.runJobs();
  expect((await getPayment(on, partner.apiKey, payment.id)).json<Payment>().status).toBe('confirmed');
  return payment.id;
}

const tokensFor = (paymentId: string, from: FakeFcm = fcm) => from.received.filter((m) => m.data.paymentId === paymentId).map((m) => m.token).sort();

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

/** The statuses of a partner's pushes and their attempt counts. */
const pushesOf = (on: TestContext, partner: Partner) =>
  on.deps.db.selectFrom('push_deliveries').select(['status', 'attempts']).where('partner_id', '=', partner.id).execute();

describe('push through a service account, past the first access token', () => {
  let sa: TestContext;
  let google: FakeFcm;
  const HOUR = 3_600_000;
  beforeAll(async () => {
    google = await startFakeFcm({ now: () => sa.now() });
    const serviceAccountFile = await google.serviceAccountFile('sa-project');
    // No FCM_PROJECT_ID: the key's project_id names the project.
    sa = await createTestContext({ config: { fcm: { projectId: null, accessToken: null, serviceAccountFile, endpoint: google.endpoint }, webhookRetryScheduleMs: [0, 1000] } });
  });
  afterAll(async () => {
    await sa?.close();
    await google?.close();
  });

  async function pushOnce(bank: Partner, userId: string): Promise<string> {
    const paymentId = await confirmedPayment(bank, { 'x-user-id': userId }, sa);
    await sa.runJobs();
    return paymentId;
  }

  it('mints an access token from the key, and another once it has expired: every push goes on the first attempt', async () => {
    const bank = await sa.partner();
    const userId = unique('user');
    const token = await device(bank, userId, sa);
    // A token another test of this block minted has ended by now (Google's last an hour).
    sa.advance(HOUR + 60_000);
    const before = google.minted.length;
    const refusedBefore = google.unauthorized.length;
    const first = await pushOnce(bank, userId);
    const second = await pushOnce(bank, userId);
    expect(google.minted).toHaveLength(before + 1);
    // The first token has ended: the pushes after it carry a fresh one.
    sa.advance(HOUR + 60_000);
    const third = await pushOnce(bank, userId);
    sa.advance(HOUR + 60_000);
    const fourth = await pushOnce(bank, userId);

    for (const paymentId of [first, second, third, fourth]) expect(tokensFor(paymentId, google)).toEqual([token]);
    const ours = google.minted.slice(before);
    expect(ours).toHaveLength(3);
    const used = [first, second, third, fourth].map((id) => google.received.find((m) => m.data.paymentId === id)?.authorization);
    expect(used).toEqual([`Bearer ${ours[0]}`, `Bearer ${ours[0]}`, `Bearer ${ours[1]}`, `Bearer ${ours[2]}`]);
    expect(google.unauthorized.slice(refusedBefore)).toEqual([]);
    expect(await pushesOf(sa, bank)).toEqual(Array.from({ length: 4 }, () => ({ status: 'delivered', attempts: 1 })));
  });

  it('mints another access token when FCM refuses one before its announced end, and sends the push with it', async () => {
    const bank = await sa.partner();
    const userId = unique('user');
    const token = await device(bank, userId, sa);
    await pushOnce(bank, userId);
    const minted = google.minted.length;
    const refused = google.unauthorized.length;
    google.expireAll();
    const paymentId = await pushOnce(bank, userId);
    expect(google.unauthorized).toHaveLength(refused + 1);
    expect(google.minted).toHaveLength(minted + 1);
    expect(google.received.filter((m) => m.data.paymentId === paymentId)).toEqual([expect.objectContaining({ token, authorization: `Bearer ${google.minted.at(-1)}` })]);
    expect(await pushesOf(sa, bank)).toEqual([
      { status: 'delivered', attempts: 1 },
      { status: 'delivered', attempts: 1 },
    ]);
  });
});

describe('push without FCM credentials', () => {
  let bare: TestContext;
  beforeAll(async () => {
    bare = await createTestContext({ config: { fcm: { projectId: null, accessToken: null, serviceAccountFile: null, endpoint: 'https://fcm.googleapis.com' } } });
  });
  afterAll(() => bare?.close());

  it('records the push skipped, not delivered, and counts it so in /metrics', async () => {
    const bank = await bare.partner();
    const userId = unique('user');
    await device(bank, userId, bare);
    await device(bank, userId, bare);
    await confirmedPayment(bank, { 'x-user-id': userId }, bare);
    await bare.runJobs();
    expect(await pushesOf(bare, bank)).toEqual([
      { status: 'skipped', attempts: 1 },
      { status: 'skipped', attempts: 1 },
    ]);
    const metrics = await bare.admin.inject({ method: 'GET', url: '/metrics' });
    expect(metrics.body).toMatch(/push_deliveries_total\{outcome="skipped"\} [2-9]/);
    expect(metrics.body).not.toMatch(/push_deliveries_total\{outcome="delivered"\}/);
    // The console's count of the partner's pushes, from the operator's API.
    const counts = await bare.admin.inject({ method: 'GET', url: `/admin/pushes?partnerId=${bank.id}`, headers: { authorization: `Bearer ${bare.config.adminToken}` } });
    expect(counts.statusCode, counts.body).toBe(200);
    expect(counts.json()).toEqual({ pending: 0, delivered: 0, skipped: 2, failed: 0 });
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
      const eventId = await unitOfWorkRunner(ctx.deps.db)((uow) => createOutbox({ now: ctx.now }).append(uow, bank.id, { event: 'payment.submitted', data: { id: unique('pay'), invoiceId: 'inv', partnerReference: null } }));
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
