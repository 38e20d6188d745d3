import { sql } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import { testConfig } from '../helpers/test-config.js';
import { createTestContext, type TestContext } from '../helpers/test-context.js';
import { checkInvariants, kyselyRunner } from '../helpers/invariants.js';
import type { InvoiceFixture } from '../../simulator/fixtures.schema.js';
import type { CallReport } from '../../simulator/call-tracker.js';

/**
 * Each ministry system's share of the confirmation checks adapts to how it answers: a system slow
 * whatever the load earns more slots than it starts with; one slowing down *because* of the load
 * (the simulator's `loaded` fault: each request waits longer the more of its requests are in
 * flight) is held to fewer. The job runs for real against the simulator over HTTP, and the
 * assertions read what the simulator counted: the status calls of each round and the most in
 * flight at once. They compare systems and phases run on the same machine with each other,
 * never with a number of slots a latency would give: the service's own time in each call (more
 * on a busy machine) moves where a limit settles, but moves it for every system alike.
 */
const WAITING = 40;
const START = 4;
const CAP = 32;
const REGISTERS = { etax: '8200011', police: '8200022' } as const;
type Checked = keyof typeof REGISTERS;
/** Every request of the system waits 80 ms for each of its requests in flight, itself included. */
const LOADED = { mode: 'loaded', delayMs: 0, perInFlightMs: 80 };
/** The system's answers take this long whatever the load: slow, but no slower with more calls in flight. */
const SLOW = { mode: 'slow', delayMs: 100 };
/** How long each check's own write holds the lock the others queue for, where the database, not the ministry, slows down. */
const DB_WAIT_MS = 50;
const SLOW_DB_ROUNDS = 4;
/** Rounds a system slow whatever the load gets to earn its slots; it reaches the cap in two on an idle machine. */
const GROWTH_ROUNDS = 6;
let ctx: TestContext | undefined;

afterEach(async () => {
  await ctx?.close();
  ctx = undefined;
});

function fixture(source: Checked, refNum: string): InvoiceFixture {
  return {
    source,
    refNum,
    description: 'adaptive limit',
    amount: 500,
    status: 'open',
    dueDate: null,
    issuedAt: null,
    payer: { register: REGISTERS[source], name: 'Adaptive' },
    payee: { id: 'ORG-1', name: 'Org' },
  };
}

/** A context with WAITING submitted payments of each system that nobody approves: each round checks every one again. */
async function withWaitingPayments(sources: Checked[] = ['etax']): Promise<{ c: TestContext; paymentIds: string[] }> {
  // A check interval far longer than a round: within one, a checked payment is not due again.
  const c = await createTestContext({
    config: { ministryTimeoutMs: 5000, confirmConcurrencyPerSource: START, confirmConcurrencyMaxPerSource: CAP, confirmPollMs: 60_000, confirmBackoffMaxMs: 60_000 },
  });
  ctx = c;
  const { apiKey } = await c.partner();
  const paymentIds: string[] = [];
  for (const source of sources) {
    await c.sim('/__control/invoices', { invoices: Array.from({ length: WAITING }, (_, i) => fixture(source, `ADAPT-${source}-${i}`)) });
    const found = (await c.api(apiKey, { method: 'GET', url: `/api/v1/invoices?ttd=${REGISTERS[source]}` })).json<{ invoices: { id: string }[] }>();
    expect(found.invoices).toHaveLength(WAITING);
    const payments = await Promise.all(
      found.invoices.map(async (i) => (await c.api(apiKey, { method: 'POST', url: '/api/v1/payments', payload: { invoiceId: i.id } })).json<{ id: string; status: string }>()),
    );
    expect(payments.every((p) => p.status === 'submitted')).toBe(true);
    paymentIds.push(...payments.map((p) => p.id));
  }
  return { c, paymentIds };
}

async function fault(c: TestContext, source: Checked, settings: object): Promise<void> {
  expect((await c.sim('/__control/faults', { source, operation: 'status', ...settings })).statusCode).toBe(200);
}

async function statusCalls(c: TestContext, source: string): Promise<CallReport> {
  return (await c.simulator.inject({ method: 'GET', url: `/__control/calls?source=${source}&operation=status` })).json<CallReport>();
}

/** What the simulator saw of one round, per system: its status calls and the most in flight at once. */
type Round = Record<Checked, { calls: number; most: number }>;

/** Every waiting payment falls due and the job checks them all, refilling each system's slots as they free. */
async function checkRound(c: TestContext): Promise<Round> {
  const job = c.deps.jobs.find((j) => j.name === 'payment-confirmation');
  if (!job) throw new Error('no confirmation job');
  expect((await c.simulator.inject({ method: 'POST', url: '/__control/calls/reset' })).statusCode).toBe(200);
  c.advance(c.config.confirmPollMs + 1000);
  await job.run();
  await job.drain?.();
  const round = {} as Round;
  for (const source of Object.keys(REGISTERS) as Checked[]) {
    const { calls, maxInFlight } = await statusCalls(c, source);
    round[source] = { calls, most: maxInFlight };
  }
  return round;
}

/** etax slow whatever the load: rounds of checks until the simulator sees as many of them at once as the cap allows. */
async function earnedWhileSlow(c: TestContext): Promise<number> {
  await fault(c, 'etax', SLOW);
  let most = 0;
  for (let round = 0; round < GROWTH_ROUNDS && most < CAP; round++) {
    const { etax } = await checkRound(c);
    expect(etax.calls).toBe(WAITING);
    most = etax.most;
  }
  // More calls at once than the limit it started with allows: it earned slots.
  expect(most).toBeGreaterThan(2 * START);
  return most;
}

it('gives a system that is slow whatever the load more slots, and backs off once its latency rises with load', async () => {
  const { c } = await withWaitingPayments();
  const earned = await earnedWhileSlow(c);

  await fault(c, 'etax', LOADED);
  let loaded = { calls: 0, most: 0 };
  for (let round = 0; round < 3; round++) {
    loaded = (await checkRound(c)).etax;
    expect(loaded.calls).toBe(WAITING);
  }
  expect(loaded.most).toBeLessThan(earned);
  expect(await checkInvariants(kyselyRunner(c.deps.db))).toEqual([]);
}, 60_000);

it('holds a system whose latency rises with its calls in flight below one that is slow whatever the load, in the same rounds', async () => {
  const { c } = await withWaitingPayments(['etax', 'police']);
  await fault(c, 'etax', LOADED);
  await fault(c, 'police', SLOW);
  let round: Round | undefined;
  for (let i = 0; i < 3; i++) {
    round = await checkRound(c);
    expect(round.etax.calls).toBe(WAITING);
    expect(round.police.calls).toBe(WAITING);
  }
  if (!round) throw new Error('no round');
  expect(round.police.most).toBeGreaterThan(2 * START);
  expect(round.etax.most).toBeLessThan(round.police.most);
  // The system with nothing to check kept its starting limit.
  expect((await statusCalls(c, 'mof')).calls).toBe(0);
  const gauge = await c.deps.metrics.ministryConcurrencyLimit.get();
  expect(gauge.values.find((v) => v.labels.source === 'mof')?.value).toBe(START);
}, 60_000);

/*
 * On the embedded database every statement runs on the event loop, where the ministry's answers
 * wait too: a slow statement there is the ministry's latency as the process sees it.
 */
describe.skipIf(!testConfig().databaseUrl)('a database that slows down', { tags: ['postgres'] }, () => {
  it("costs a ministry system no slots: its limit learns from the ministry's answers alone", { timeout: 60_000 }, async () => {
    const { c } = await withWaitingPayments();
    const earned = await earnedWhileSlow(c);

    // Now each check's own write (the next check's time) queues behind the others' for a lock, as
    // on a database busy with other systems' checks and the partners' requests: the more checks in
    // flight, the longer each waits, while the ministry answers as fast as before.
    await sql`CREATE FUNCTION slow_check_write() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_advisory_xact_lock(4242); PERFORM pg_sleep(${sql.lit(DB_WAIT_MS / 1000)}); RETURN NEW; END $$`.execute(c.deps.db);
    await sql`CREATE TRIGGER slow_check_write BEFORE UPDATE OF status_checked_at ON payments FOR EACH ROW EXECUTE FUNCTION slow_check_write()`.execute(c.deps.db);
    let last = { calls: 0, most: 0 };
    for (let round = 0; round < SLOW_DB_ROUNDS; round++) {
      last = (await checkRound(c)).etax;
      expect(last.calls).toBe(WAITING);
    }
    // Each round opens with every slot the limit allows asking at once: it kept what it had
    // earned. Measured from the claim instead, each check's time grew with the queue for the
    // lock, and the limit shrank (to 20-22 of 24 in two runs).
    expect(last.most).toBeGreaterThanOrEqual(earned);
  });
});
