import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { unitOfWorkRunner } from '../../src/db/unit-of-work.js';
import { createTestContext, type TestContext } from '../helpers/test-context.js';
import { receiverPool, startReceiver, type WebhookReceiver } from '../helpers/webhook-receiver.js';
import { addOwnInvoice } from '../helpers/own-invoice.js';
import { createOutbox } from '../../src/db/outbox.statements.js';
import { createWebhookDeliveryRepository, type ClaimLimits } from '../../src/db/repositories/webhook-delivery.repository.js';
import type { Job } from '../../src/work/job-runner.js';

const SECRET = 'whsec_0123456789abcdef';
const CONCURRENCY = { total: 32, perEndpoint: 2, perPartner: 5 };
/** Long enough that a hanging attempt is still in flight for the whole test. */
const TIMEOUT_MS = 60_000;
/** Bounds the waits below only so a regression fails instead of hanging; nothing asserts a time. */
const ARRIVAL = { timeout: 5000, interval: 10 };

let ctx: TestContext;
const receivers = receiverPool();

const openContext = async () => {
  ctx = await createTestContext({ config: { webhookTimeoutMs: TIMEOUT_MS, webhookConcurrency: CONCURRENCY } });
};
const closeContext = async () => {
  await receivers.closeAll();
  await ctx.close();
};

const receiver = (script: Parameters<typeof startReceiver>[0] = []): Promise<WebhookReceiver> => receivers.start(script);

async function register(apiKey: string, url: string) {
  return ctx.api(apiKey, { method: 'POST', url: '/api/v1/webhooks', payload: { url, secret: SECRET, events: ['payment.submitted'] } });
}

async function registerOk(apiKey: string, url: string): Promise<string> {
  const res = await register(apiKey, url);
  expect(res.statusCode).toBe(201);
  return res.json<{ id: string }>().id;
}

/** One `payment.submitted` event of the partner: a due delivery per webhook it has. */
async function submitted(partnerId: string, n: number): Promise<void> {
  const events = createOutbox({ now: ctx.now });
  for (let i = 0; i < n; i++) await unitOfWorkRunner(ctx.deps.db)((uow) => events.append(uow, partnerId, { event: 'payment.submitted', data: { id: `${partnerId}-${i}`, invoiceId: 'inv', partnerReference: null } }));
}

function deliveryJob(): Job {
  const job = ctx.deps.jobs.find((j) => j.name === 'webhook-delivery');
  if (!job?.drain) throw new Error('no webhook delivery job with drain');
  return job;
}

async function deliveriesOf(webhookIds: string[]) {
  return ctx.deps.db
    .selectFrom('webhook_deliveries')
    .select(['id', 'webhook_id', 'status', 'attempts', 'next_attempt_at'])
    .where('webhook_id', 'in', webhookIds)
    .execute();
}

async function attemptCount(webhookIds: string[]): Promise<number> {
  return (await ctx.deps.db.selectFrom('webhook_attempts').select('id').where('webhook_id', 'in', webhookIds).execute()).length;
}

describe('delivery fairness', () => {
  // A claim takes every due row in the database, so each case starts from an empty one.
  beforeEach(openContext);
  afterEach(closeContext);

  it("delivers one partner's event in the first pass while another's 60 deliveries hang", async () => {
    const a = await ctx.partner();
    const b = await ctx.partner();
    // Two of A's webhooks point at the same hanging host, as a partner may well register them.
    const hangingHost = await receiver(Array(100).fill('hang'));
    const otherHangingHost = await receiver(Array(100).fill('hang'));
    const aHooks = [await registerOk(a.apiKey, hangingHost.url), await registerOk(a.apiKey, `${hangingHost.url}?copy=1`), await registerOk(a.apiKey, otherHangingHost.url)];
    await submitted(a.id, 20);
    // A's backlog is older than anything of B's, so oldest-first alone would never reach B.
    await ctx.deps.db
      .updateTable('webhook_deliveries')
      .set({ next_attempt_at: new Date(ctx.now().getTime() - 3600_000) })
      .where('webhook_id', 'in', aHooks)
      .execute();
    const healthy = await receiver();
    const bHook = await registerOk(b.apiKey, healthy.url);
    await submitted(b.id, 1);
    expect(await deliveriesOf(aHooks)).toHaveLength(60);

    const job = deliveryJob();
    await job.run();
    let drained = false;
    const drain = job.drain?.().then(() => (drained = true));

    await vi.waitFor(() => expect(healthy.received).toHaveLength(1), ARRIVAL);
    await vi.waitFor(async () => expect((await deliveriesOf([bHook]))[0]?.status).toBe('delivered'), ARRIVAL);
    // A's attempts reached their receivers and are still unanswered.
    await vi.waitFor(() => expect(hangingHost.received.length + otherHangingHost.received.length).toBe(CONCURRENCY.perPartner), ARRIVAL);
    expect(drained).toBe(false);
    expect(await attemptCount(aHooks)).toBe(0);

    const claimedOf = async () => (await deliveriesOf(aHooks)).filter((d) => d.attempts > 0);
    const claimed = await claimedOf();
    expect(claimed).toHaveLength(CONCURRENCY.perPartner);
    for (const hook of aHooks) expect(claimed.filter((d) => d.webhook_id === hook).length).toBeLessThanOrEqual(CONCURRENCY.perEndpoint);
    expect(claimed.every((d) => d.status === 'pending' && d.next_attempt_at.getTime() > ctx.now().getTime())).toBe(true);

    // While A's slots are full, another pass claims nothing more of A's.
    await job.run();
    expect(await claimedOf()).toHaveLength(CONCURRENCY.perPartner);
    expect(drained).toBe(false);

    // Shutdown claims nothing more and waits for the attempts in flight; the receivers going away ends them.
    const stopping = job.stop?.();
    await receivers.closeAll();
    await stopping;
    await drain;
    expect(await attemptCount(aHooks)).toBe(CONCURRENCY.perPartner);
    const after = await claimedOf();
    expect(after.every((d) => d.status === 'pending' && d.attempts === 1)).toBe(true);
  });

  it('delivers a backlog larger than its slots in one pass, claiming again as each slot frees', async () => {
    const p = await ctx.partner();
    const healthy = await receiver();
    await registerOk(p.apiKey, healthy.url);
    const backlog = 4 * CONCURRENCY.perEndpoint;
    await submitted(p.id, backlog);

    const job = deliveryJob();
    await job.run();
    await job.drain?.();
    expect(healthy.received).toHaveLength(backlog);
  });

  it('delivers a confirmation without waiting for its own pass: the confirmation job nudges it', async () => {
    const p = await ctx.partner();
    const healthy = await receiver();
    const res = await ctx.api(p.apiKey, { method: 'POST', url: '/api/v1/webhooks', payload: { url: healthy.url, secret: SECRET, events: ['payment.confirmed'] } });
    expect(res.statusCode).toBe(201);
    const { refNum } = await addOwnInvoice(ctx, 'police');
    const invoiceId = (await ctx.api(p.apiKey, { method: 'GET', url: `/api/v1/invoices/ref/${refNum}` })).json<{ id: string }>().id;
    expect((await ctx.api(p.apiKey, { method: 'POST', url: '/api/v1/payments', payload: { invoiceId } })).statusCode).toBe(201);
    await ctx.sim('/__control/approve', { refNum });

    const confirmation = ctx.deps.jobs.find((j) => j.name === 'payment-confirmation');
    await confirmation?.run();
    await confirmation?.drain?.();
    // Only the confirmation job was run: the delivery job's own pass never came.
    await deliveryJob().drain?.();
    expect(healthy.received.map((r) => (JSON.parse(r.body) as { event: string }).event)).toEqual(['payment.confirmed']);
  });

  it('takes partners in turns when the overall limit is short', async () => {
    const repo = createWebhookDeliveryRepository(ctx.deps.db);
    const a = await ctx.partner();
    const b = await ctx.partner();
    const aHook = await registerOk(a.apiKey, 'https://hooks.example.com/a');
    const bHook = await registerOk(b.apiKey, 'https://hooks.example.com/b');
    await submitted(a.id, 5);
    await submitted(b.id, 1);
    await ctx.deps.db.updateTable('webhook_deliveries').set({ next_attempt_at: new Date(ctx.now().getTime() - 3600_000) }).where('webhook_id', '=', aHook).execute();

    const limits: ClaimLimits = { total: 2, perEndpoint: 5, perPartner: 5, endpointFree: new Map(), partnerFree: new Map() };
    const at = ctx.now();
    const claimed = await repo.claimDue(at, new Date(at.getTime() + 60_000), limits);
    expect(claimed.map((c) => c.webhookId).sort()).toEqual([aHook, bHook].sort());

    // Endpoints and partners at their limit here are skipped, whatever their backlog.
    const next = await repo.claimDue(at, new Date(at.getTime() + 60_000), { ...limits, total: 10, endpointFree: new Map([[aHook, 1]]), partnerFree: new Map([[b.id, 0]]) });
    expect(next.map((c) => c.webhookId)).toEqual([aHook]);
  });

  it('leaves a newer claim alone when the result of an expired one arrives late', async () => {
    const repo = createWebhookDeliveryRepository(ctx.deps.db);
    const p = await ctx.partner();
    const hook = await registerOk(p.apiKey, 'https://hooks.example.com/late');
    await submitted(p.id, 1);
    const limits: ClaimLimits = { total: 1, perEndpoint: 1, perPartner: 1, endpointFree: new Map(), partnerFree: new Map() };

    const t0 = ctx.now();
    const firstLease = new Date(t0.getTime() + 1000);
    const [first] = await repo.claimDue(t0, firstLease, limits);
    expect(first?.attempt).toBe(1);
    const afterLease = new Date(firstLease.getTime() + 1);
    const secondLease = new Date(afterLease.getTime() + 60_000);
    const [second] = await repo.claimDue(afterLease, secondLease, limits);
    expect(second?.attempt).toBe(2);
    if (!first || !second) throw new Error('claims missing');

    await repo.finish(first, { succeeded: false, statusCode: null, durationMs: 5, error: 'late', nextAttemptAt: afterLease }, afterLease);
    let [row] = await deliveriesOf([hook]);
    expect(row).toMatchObject({ status: 'pending', attempts: 2, next_attempt_at: secondLease });

    await repo.finish(second, { succeeded: true, statusCode: 200, durationMs: 5 }, afterLease);
    [row] = await deliveriesOf([hook]);
    expect(row).toMatchObject({ status: 'delivered', attempts: 2 });
  });
});

describe('webhooks per partner', () => {
  beforeAll(openContext);
  afterAll(closeContext);

  const limitBody = (max: number, requestId: unknown) => ({
    statusCode: 409,
    error: 'Conflict',
    message: `A partner may have at most ${max} webhooks; delete one (DELETE /api/v1/webhooks/{id}) before registering another`,
    code: 'webhook_limit_reached',
    requestId,
  });

  it('refuses the 11th webhook with 409 until one is deleted', async () => {
    expect(ctx.config.webhookMaxPerPartner).toBe(10);
    const p = await ctx.partner();
    const other = await ctx.partner();
    const ids: string[] = [];
    for (let i = 0; i < 10; i++) ids.push(await registerOk(p.apiKey, `https://hooks.example.com/${i}`));

    const refused = await register(p.apiKey, 'https://hooks.example.com/11');
    expect(refused.statusCode).toBe(409);
    expect(refused.json()).toEqual(limitBody(10, refused.headers['x-request-id']));
    // The cap is per partner.
    await registerOk(other.apiKey, 'https://hooks.example.com/other');

    const del = await ctx.api(p.apiKey, { method: 'DELETE', url: `/api/v1/webhooks/${ids[0] ?? ''}` });
    expect(del.statusCode).toBe(200);
    await registerOk(p.apiKey, 'https://hooks.example.com/11');
    expect((await register(p.apiKey, 'https://hooks.example.com/12')).statusCode).toBe(409);
    expect((await ctx.api(p.apiKey, { method: 'GET', url: '/api/v1/webhooks' })).json<unknown[]>()).toHaveLength(10);
  });

  it('lets concurrent registrations fill the cap but not pass it', async () => {
    const p = await ctx.partner();
    for (let i = 0; i < 8; i++) await registerOk(p.apiKey, `https://hooks.example.com/${i}`);
    const results = await Promise.all(Array.from({ length: 6 }, (_, i) => register(p.apiKey, `https://hooks.example.com/race-${i}`)));
    expect(results.map((r) => r.statusCode).sort()).toEqual([201, 201, 409, 409, 409, 409]);
    const count = await ctx.deps.db.selectFrom('webhooks').select('id').where('partner_id', '=', p.id).where('deleted_at', 'is', null).execute();
    expect(count).toHaveLength(10);
  });
});
