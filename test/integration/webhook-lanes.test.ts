import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { unitOfWorkRunner } from '../../src/db/unit-of-work.js';
import { createTestContext, type TestContext } from '../helpers/test-context.js';
import { receiverPool, type WebhookReceiver } from '../helpers/webhook-receiver.js';
import { ownInvoice, payOk, type Partner } from '../helpers/api.js';
import { createOutbox } from '../../src/db/outbox.statements.js';
import { createWebhookDeliveryRepository, partnerShare, type ClaimLimits } from '../../src/db/repositories/webhook-delivery.repository.js';
import type { RunningJobs } from '../../src/work/job-runner.js';

const SECRET = 'whsec_0123456789abcdef';
const HANGING_PARTNERS = 5;
/** Deliveries due to each hanging webhook from the start: enough to keep it hanging for the whole run. */
const HANGING_BACKLOG = 6;
const PAYMENTS = 20;

let ctx: TestContext;
let jobs: RunningJobs | undefined;
const receivers = receiverPool();

/**
 * The documented defaults, but for an attempt timeout longer than any test here waits: no hanging
 * attempt ends, so each delivery of the healthy partner went out while they all hung. How soon it
 * went out is bench/webhook-lanes.bench.ts's measure, at the defaults.
 */
const settings = {
  webhookTimeoutMs: 300_000,
  webhookPollMs: 1000,
  webhookConcurrency: { total: 32, perEndpoint: 2, perPartner: 8 },
  webhookSlowConcurrency: 8,
};

beforeEach(async () => {
  ctx = await createTestContext({ config: settings });
});
afterEach(async () => {
  // The receivers go first: closing them ends the hanging attempts the job's stop waits for.
  await receivers.closeAll();
  await jobs?.stop();
  jobs = undefined;
  await ctx.close();
});

async function registerOk(apiKey: string, url: string): Promise<string> {
  const res = await ctx.api(apiKey, { method: 'POST', url: '/api/v1/webhooks', payload: { url, secret: SECRET, events: ['payment.submitted'] } });
  expect(res.statusCode, res.body).toBe(201);
  return res.json<{ id: string }>().id;
}

/** `n` `payment.submitted` events of the partner: a due delivery each per webhook it has. */
async function submitted(partnerId: string, n: number): Promise<void> {
  const events = createOutbox({ now: ctx.now });
  for (let i = 0; i < n; i++) await unitOfWorkRunner(ctx.deps.db)((uow) => events.append(uow, partnerId, { event: 'payment.submitted', data: { id: `${partnerId}-${i}`, invoiceId: 'inv', partnerReference: null } }));
}

interface HangingPartner {
  id: string;
  host: WebhookReceiver;
}

/** A partner with as many webhooks as it may have, all at one receiver that never answers, and a backlog at each. */
async function hangingPartner(): Promise<HangingPartner> {
  const p = await ctx.partner();
  const host = await receivers.start(Array<'hang'>(10_000).fill('hang'));
  for (let i = 0; i < ctx.config.webhookMaxPerPartner; i++) await registerOk(p.apiKey, `${host.url}?n=${i}`);
  await submitted(p.id, HANGING_BACKLOG);
  return { id: p.id, host };
}

/** The healthy partner pays `PAYMENTS` invoices; resolves once every payment.submitted has arrived at its receiver. */
async function healthyPartnerPays(): Promise<void> {
  const healthy: Partner = await ctx.partner();
  const receiver = await receivers.start();
  await registerOk(healthy.apiKey, receiver.url);
  const paid = new Set<string>();
  for (let i = 0; i < PAYMENTS; i++) paid.add((await payOk(ctx, healthy.apiKey, { invoiceId: (await ownInvoice(ctx, healthy, 'mof')).id })).id);
  const arrived = () => new Set(receiver.received.map((r) => (JSON.parse(r.body) as { data: { id: string } }).data.id).filter((id) => paid.has(id)));
  // Bounds the wait only so a regression fails instead of hanging: the hanging attempts outlast it.
  await expect.poll(() => arrived().size, { timeout: 60_000, interval: 100 }).toBe(PAYMENTS);
}

/** Attempts of the hanging partners' webhooks that have ended (succeeded, failed or timed out). */
async function endedHangingAttempts(hanging: HangingPartner[]): Promise<number> {
  const row = await ctx.deps.db
    .selectFrom('webhook_attempts as a')
    .innerJoin('webhooks as w', 'w.id', 'a.webhook_id')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('w.partner_id', 'in', hanging.map((h) => h.id))
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/** The attempts each hanging partner's receiver holds (it answers none). */
function held(hanging: HangingPartner[]): number[] {
  return hanging.map((h) => h.host.received.length);
}

describe('delivery lanes', () => {
  it("delivers every payment.submitted of a healthy partner while five partners' 50 new webhooks hang, before any of their attempts ends", { timeout: 90_000 }, async () => {
    const hanging: HangingPartner[] = [];
    for (let i = 0; i < HANGING_PARTNERS; i++) hanging.push(await hangingPartner());
    jobs = ctx.deps.startJobs();
    // The lane is loaded first: each hanging partner holds its share of the normal lane's slots.
    const share = partnerShare(settings.webhookConcurrency.total, HANGING_PARTNERS);
    await expect.poll(() => held(hanging), { timeout: 20_000 }).toEqual(hanging.map(() => share));

    await healthyPartnerPays();
    expect(await endedHangingAttempts(hanging)).toBe(0);
    // The hanging partners took no more slots meanwhile.
    expect(held(hanging)).toEqual(hanging.map(() => share));
  });

  it('delivers every payment.submitted of a healthy partner while the slow lane holds the attempts of 50 hanging webhooks', { timeout: 90_000 }, async () => {
    const hanging: HangingPartner[] = [];
    for (let i = 0; i < HANGING_PARTNERS; i++) hanging.push(await hangingPartner());
    // Each hanging webhook's last attempt failed: all of them are in the slow lane.
    await ctx.deps.db.updateTable('webhooks').set({ slow_since: ctx.now() }).where('partner_id', 'in', hanging.map((h) => h.id)).execute();
    jobs = ctx.deps.startJobs();
    const share = partnerShare(settings.webhookSlowConcurrency, HANGING_PARTNERS);
    await expect.poll(() => held(hanging), { timeout: 20_000 }).toEqual(hanging.map(() => share));

    await healthyPartnerPays();
    expect(await endedHangingAttempts(hanging)).toBe(0);
    // The slow lane kept to its own slots: the hanging webhooks got none of the normal lane's.
    expect(held(hanging)).toEqual(hanging.map(() => share));
    const moved = await ctx.deps.db.selectFrom('webhooks').select('id').where('partner_id', 'in', hanging.map((h) => h.id)).where('slow_since', 'is', null).execute();
    expect(moved).toEqual([]);
  });

  it('moves a webhook to the slow lane when an attempt fails and back after a success', async () => {
    const repo = createWebhookDeliveryRepository(ctx.deps.db);
    const p = await ctx.partner();
    const hook = await registerOk(p.apiKey, 'https://hooks.example.com/lanes');
    await submitted(p.id, 3);
    const normal: ClaimLimits = { lane: 'normal', total: 10, perEndpoint: 1, perPartner: 8, endpointFree: new Map(), partnerFree: new Map() };
    const slow: ClaimLimits = { ...normal, lane: 'slow' };
    const lease = (at: Date) => new Date(at.getTime() + 60_000);
    const laneOf = async () =>
      (await ctx.deps.db.selectFrom('webhooks').select('slow_since').where('id', '=', hook).executeTakeFirstOrThrow()).slow_since === null ? 'normal' : 'slow';

    let at = ctx.now();
    expect(await repo.claimDue(at, lease(at), slow)).toEqual([]);
    const [first] = await repo.claimDue(at, lease(at), normal);
    if (!first) throw new Error('nothing claimed in the normal lane');
    expect(await repo.finish(first, { succeeded: false, statusCode: null, durationMs: 5000, error: 'timeout', nextAttemptAt: lease(at) }, at)).toEqual({ recorded: true, movedLane: true });
    expect(await laneOf()).toBe('slow');

    at = ctx.now();
    expect(await repo.claimDue(at, lease(at), normal)).toEqual([]);
    const [second] = await repo.claimDue(at, lease(at), slow);
    if (!second) throw new Error('nothing claimed in the slow lane');
    expect(await repo.finish(second, { succeeded: true, statusCode: 200, durationMs: 5 }, at)).toEqual({ recorded: true, movedLane: true });
    expect(await laneOf()).toBe('normal');
    expect(await repo.claimDue(at, lease(at), slow)).toEqual([]);
    expect(await repo.claimDue(at, lease(at), normal)).toHaveLength(1);
  });

  it("keeps a stale attempt's result from moving the webhook to another lane", async () => {
    const repo = createWebhookDeliveryRepository(ctx.deps.db);
    const p = await ctx.partner();
    const hook = await registerOk(p.apiKey, 'https://hooks.example.com/stale');
    await submitted(p.id, 1);
    const limits: ClaimLimits = { total: 1, perEndpoint: 1, perPartner: 1, endpointFree: new Map(), partnerFree: new Map() };
    const t0 = ctx.now();
    const [first] = await repo.claimDue(t0, new Date(t0.getTime() + 1000), limits);
    const t1 = new Date(t0.getTime() + 1001);
    const [second] = await repo.claimDue(t1, new Date(t1.getTime() + 60_000), limits);
    if (!first || !second) throw new Error('claims missing');

    expect(await repo.finish(first, { succeeded: false, statusCode: null, durationMs: 1000, error: 'timeout', nextAttemptAt: t1 }, t1)).toEqual({ recorded: false, movedLane: false });
    const row = await ctx.deps.db.selectFrom('webhooks').select('slow_since').where('id', '=', hook).executeTakeFirstOrThrow();
    expect(row.slow_since).toBeNull();
    const delivery = await ctx.deps.db.selectFrom('webhook_deliveries').select(['status', 'attempts', 'next_attempt_at']).where('id', '=', second.id).executeTakeFirstOrThrow();
    expect(delivery).toMatchObject({ status: 'pending', attempts: 2 });
    expect(delivery.next_attempt_at.getTime()).toBe(t1.getTime() + 60_000);
    expect(await repo.finish(second, { succeeded: true, statusCode: 200, durationMs: 5 }, t1)).toEqual({ recorded: true, movedLane: false });
  });

  it('leaves a share of a lane free for a partner whose work arrives next', async () => {
    const repo = createWebhookDeliveryRepository(ctx.deps.db);
    const partners = [];
    for (let i = 0; i < 3; i++) {
      const p = await ctx.partner();
      for (let j = 0; j < 3; j++) await registerOk(p.apiKey, `https://hooks.example.com/${i}/${j}`);
      await submitted(p.id, 2);
      partners.push(p.id);
    }
    // 8 slots, 3 partners with work: each may hold 8 / (3 + 1) = 2, whatever its own cap.
    const limits: ClaimLimits = { total: 8, perEndpoint: 2, perPartner: 8, endpointFree: new Map(), partnerFree: new Map(), capacity: 8 };
    const at = ctx.now();
    const claimed = await repo.claimDue(at, new Date(at.getTime() + 60_000), limits);
    expect(partners.map((id) => claimed.filter((c) => c.partnerId === id).length)).toEqual([2, 2, 2]);
  });
});
