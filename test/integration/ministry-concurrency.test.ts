import { sql } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import { testConfig } from '../helpers/test-config.js';
import { createTestContext, type TestContext } from '../helpers/test-context.js';
import { checkInvariants, kyselyRunner } from '../helpers/invariants.js';
import type { InvoiceFixture } from '../../simulator/fixtures.schema.js';

/**
 * Each ministry system's share of the confirmation checks adapts to how it answers: etax slow
 * whatever the load earns more slots than it starts with; etax slowing down *because* of the load
 * (the simulator's `loaded` fault: each request waits longer the more of etax's requests are in
 * flight) holds its limit well below the cap. The job runs for real against the simulator over
 * HTTP; the assertions read the limit the job exposes (`ministry_concurrency_limit`).
 */
const WAITING = 40;
const START = 4;
const CAP = 32;
const REGISTER = '8200011';
/**
 * Every etax request waits 80 ms for each etax request in flight, itself included: at the starting
 * limit a call takes 320 ms, at the cap 2.6 s, so latency climbs past twice the light-load baseline
 * long before the cap. The limit settles where latency reaches twice the baseline plus its 50 ms
 * of jitter allowance; the service's own time in each call (more on a busy machine) moves that
 * point up by about its share of a slot's delay, so a smaller delay per call in flight let a busy
 * run's limit reach 19.
 */
const LOADED = { source: 'etax', mode: 'loaded', delayMs: 0, perInFlightMs: 80 };
/** etax's answers take this long whatever the load: slow, but no slower with more calls in flight. */
const SLOW_MS = 100;
/** How long each check's own write holds the lock the others queue for, where the database, not the ministry, slows down. */
const DB_WAIT_MS = 50;
const SLOW_DB_ROUNDS = 4;
let ctx: TestContext | undefined;

afterEach(async () => {
  await ctx?.close();
  ctx = undefined;
});

function fixture(refNum: string): InvoiceFixture {
  return {
    source: 'etax',
    refNum,
    description: 'adaptive limit',
    amount: 500,
    status: 'open',
    dueDate: null,
    issuedAt: null,
    payer: { register: REGISTER, name: 'Adaptive' },
    payee: { id: 'ORG-1', name: 'Org' },
  };
}

/** A context with WAITING submitted etax payments that nobody approves: each round checks every one again. */
async function withWaitingPayments(): Promise<{ c: TestContext; paymentIds: string[] }> {
  // A check interval far longer than a round: within one, a checked payment is not due again.
  const c = await createTestContext({
    config: { ministryTimeoutMs: 5000, confirmConcurrencyPerSource: START, confirmConcurrencyMaxPerSource: CAP, confirmPollMs: 60_000, confirmBackoffMaxMs: 60_000 },
  });
  ctx = c;
  const refs = Array.from({ length: WAITING }, (_, i) => `ADAPT-ET-${i}`);
  await c.sim('/__control/invoices', { invoices: refs.map(fixture) });
  const { apiKey } = await c.partner();
  const found = (await c.api(apiKey, { method: 'GET', url: `/api/v1/invoices?ttd=${REGISTER}` })).json<{ invoices: { id: string }[] }>();
  expect(found.invoices).toHaveLength(WAITING);
  const payments = await Promise.all(
    found.invoices.map(async (i) => (await c.api(apiKey, { method: 'POST', url: '/api/v1/payments', payload: { invoiceId: i.id } })).json<{ id: string; status: string }>()),
  );
  expect(payments.every((p) => p.status === 'submitted')).toBe(true);
  return { c, paymentIds: payments.map((p) => p.id) };
}

async function etaxLimit(c: TestContext): Promise<number> {
  const gauge = await c.deps.metrics.ministryConcurrencyLimit.get();
  const value = gauge.values.find((v) => v.labels.source === 'etax')?.value;
  if (value === undefined) throw new Error('no etax limit exposed');
  return value;
}

/** Every waiting payment falls due and the job checks them all, refilling etax's slots as they free. */
async function checkRound(c: TestContext): Promise<void> {
  const job = c.deps.jobs.find((j) => j.name === 'payment-confirmation');
  if (!job) throw new Error('no confirmation job');
  c.advance(c.config.confirmPollMs + 1000);
  await job.run();
  await job.drain?.();
}

async function checksMade(c: TestContext, paymentIds: string[]): Promise<number> {
  const rows = await c.deps.db.selectFrom('payments').select('check_attempts').where('id', 'in', paymentIds).execute();
  return rows.reduce((sum, r) => sum + r.check_attempts, 0);
}

/** etax slow whatever the load: rounds of checks until its limit is well above where it started. */
async function slotsEarnedWhileSlow(c: TestContext): Promise<number> {
  await c.sim('/__control/faults', { source: 'etax', mode: 'slow', delayMs: SLOW_MS });
  for (let round = 0; round < 6 && (await etaxLimit(c)) <= 2 * START; round++) await checkRound(c);
  const grown = await etaxLimit(c);
  expect(grown).toBeGreaterThan(2 * START);
  return grown;
}

it('gives a system that is slow whatever the load more slots, and backs off once its latency rises with load', async () => {
  const { c, paymentIds } = await withWaitingPayments();
  expect(await etaxLimit(c)).toBe(START);

  const grown = await slotsEarnedWhileSlow(c);

  await c.sim('/__control/faults', LOADED);
  const before = await checksMade(c, paymentIds);
  for (let round = 0; round < 3; round++) await checkRound(c);
  expect(await checksMade(c, paymentIds)).toBe(before + 3 * WAITING);
  const backedOff = await etaxLimit(c);
  expect(backedOff).toBeLessThan(grown);
  expect(backedOff).toBeLessThanOrEqual(CAP / 2);
  expect(await checkInvariants(kyselyRunner(c.deps.db))).toEqual([]);
}, 60_000);

it('keeps a system whose latency rises with its calls in flight well below the cap', async () => {
  const { c, paymentIds } = await withWaitingPayments();
  await c.sim('/__control/faults', LOADED);
  for (let round = 0; round < 3; round++) await checkRound(c);
  expect(await checksMade(c, paymentIds)).toBe(3 * WAITING);
  const limit = await etaxLimit(c);
  expect(limit).toBeGreaterThanOrEqual(START);
  expect(limit).toBeLessThanOrEqual(CAP / 2);
  // The other systems had nothing to check and kept their starting limit.
  const gauge = await c.deps.metrics.ministryConcurrencyLimit.get();
  expect(gauge.values.filter((v) => v.labels.source !== 'etax').map((v) => v.value)).toEqual([START, START]);
}, 60_000);

/*
 * On the embedded database every statement runs on the event loop, where the ministry's answers
 * wait too: a slow statement there is the ministry's latency as the process sees it.
 */
describe.skipIf(!testConfig().databaseUrl)('a database that slows down', { tags: ['postgres'] }, () => {
  it("costs a ministry system no slots: its limit learns from the ministry's answers alone", { timeout: 60_000 }, async () => {
    const { c, paymentIds } = await withWaitingPayments();
    const grown = await slotsEarnedWhileSlow(c);

    // Now each check's own write (the next check's time) queues behind the others' for a lock, as
    // on a database busy with other systems' checks and the partners' requests: the more checks in
    // flight, the longer each waits, while the ministry answers as fast as before.
    await sql`CREATE FUNCTION slow_check_write() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_advisory_xact_lock(4242); PERFORM pg_sleep(${sql.lit(DB_WAIT_MS / 1000)}); RETURN NEW; END $$`.execute(c.deps.db);
    await sql`CREATE TRIGGER slow_check_write BEFORE UPDATE OF status_checked_at ON payments FOR EACH ROW EXECUTE FUNCTION slow_check_write()`.execute(c.deps.db);
    const before = await checksMade(c, paymentIds);
    for (let round = 0; round < SLOW_DB_ROUNDS; round++) await checkRound(c);
    expect(await checksMade(c, paymentIds)).toBe(before + SLOW_DB_ROUNDS * WAITING);
    // It kept what it had earned; measured from the claim instead, each check's time grew with the
    // queue for the lock, and the limit shrank (to 20-22 of 24 in two runs).
    const limit = await etaxLimit(c);
    expect(limit).toBeGreaterThanOrEqual(grown);
    expect(limit).toBeGreaterThan(CAP / 2);
  });
});
