import { randomBytes } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { createTestContext, dropSchema, type TestContext } from '../helpers/test-context.js';
import { testConfig } from '../helpers/test-config.js';
import { approve, getPayment, partnerWithInvoice, partnerWithPayment, payOk, type Payment } from '../helpers/api.js';
import { createPaymentRepository } from '../../src/payments/payment.repository.js';
import type { Config } from '../../src/config/config.js';
import type { CallReport } from '../../simulator/call-tracker.js';
import { recordActivity } from '../helpers/job-activity.js';

/*
 * GET /payments/{id} asks the ministry live, within what the ministry system is allowed: the
 * per-system limit the confirmation job's checks share, one status call per payment at a time
 * (across instances: the payment's status-check lease), and an answer within the ministry
 * timeout + 1 s whatever the ministry does. The answer is a ministry answer given after the read
 * arrived (`X-Status-Source: live`), or the stored status (`stored`). Status calls failing never
 * refuse a payment's submit. Counted at the simulator, over real HTTP.
 */

/** Status checks in flight per system and instance: the adaptive limit pinned (floor = cap). */
const LIMIT = 2;
/** The ministry timeout of the tests whose status calls time out: each of their calls waits it out. */
const SHORT_TIMEOUT_MS = 1000;
/** How long the ministry holds a check that a read arrives during: the read reaches its wait well within it. */
const HELD_MS = 800;

/**
 * A check interval far longer than a test: a payment the job checked is not due again, so a pass
 * checks each payment once.
 */
const POLL_MS = 60_000;
const LIVE: Partial<Config> = {
  confirmConcurrencyPerSource: LIMIT,
  confirmConcurrencyMaxPerSource: LIMIT,
  confirmPollMs: POLL_MS,
  confirmBackoffMaxMs: POLL_MS,
};

const contexts: TestContext[] = [];
afterEach(async () => {
  for (const c of contexts.splice(0)) await c.close();
});

async function context(config: Partial<Config> = {}, opts: Parameters<typeof createTestContext>[0] = {}): Promise<TestContext> {
  const c = await createTestContext({ ...opts, config: { ...LIVE, ...config } });
  contexts.push(c);
  return c;
}

interface Submitted {
  apiKey: string;
  id: string;
  refNum: string;
}

/** `n` submitted etax payments, each of a partner of its own. */
async function submittedPayments(c: TestContext, n: number): Promise<Submitted[]> {
  const made: Submitted[] = [];
  for (let i = 0; i < n; i += 1) {
    const { partner, invoice, payment } = await partnerWithPayment(c, 'etax');
    made.push({ apiKey: partner.apiKey, id: payment.id, refNum: invoice.refNum });
  }
  return made;
}

/** `late`: the ministry answers at once but its answer arrives `delayMs` later (it says what it knew when asked). */
async function setStatusFault(c: TestContext, mode: 'slow' | 'late' | 'timeout' | 'none', delayMs = 0): Promise<void> {
  const res = await c.sim('/__control/faults', { source: 'etax', operation: 'status', mode, delayMs });
  expect(res.statusCode, res.body).toBe(200);
}

/** etax's status calls as the simulator counted them since the last reset. */
async function statusCalls(c: TestContext): Promise<CallReport> {
  const res = await c.simulator.inject({ method: 'GET', url: '/__control/calls?source=etax&operation=status' });
  expect(res.statusCode, res.body).toBe(200);
  return res.json<CallReport>();
}

async function resetCalls(c: TestContext): Promise<void> {
  expect((await c.simulator.inject({ method: 'POST', url: '/__control/calls/reset' })).statusCode).toBe(200);
}

interface Read {
  statusCode: number;
  status: string;
  /** X-Status-Source: every 200 answer says where its status came from. */
  source: string | undefined;
  ms: number;
}

async function timedRead(c: TestContext, p: Submitted): Promise<Read> {
  const startedAt = performance.now();
  const res = await getPayment(c, p.apiKey, p.id);
  const source = res.headers['x-status-source'] as string | undefined;
  if (res.statusCode === 200) expect(['live', 'stored']).toContain(source);
  return { statusCode: res.statusCode, status: res.json<Payment>().status, source, ms: performance.now() - startedAt };
}

/** Until the simulator has `n` of etax's status calls in flight: the checks that make them are asking. */
async function asking(c: TestContext, n: number): Promise<void> {
  await expect.poll(async () => (await statusCalls(c)).inFlight, { timeout: 10_000 }).toBe(n);
}

/** `count` reads at once, spread over the payments, each payment's reads over every instance. */
function burst(instances: TestContext[], payments: Submitted[], count: number): Promise<Read[]> {
  const instanceOf = (i: number) => instances[Math.floor(i / payments.length) % instances.length] as TestContext;
  return Promise.all(Array.from({ length: count }, (_, i) => timedRead(instanceOf(i), payments[i % payments.length] as Submitted)));
}

/** One pass of the confirmation job, waiting for the checks it started. */
async function confirmationPass(c: TestContext): Promise<void> {
  const job = c.deps.jobs.find((j) => j.name === 'payment-confirmation');
  if (!job) throw new Error('no confirmation job');
  await job.run();
  await job.drain?.();
}

/** Another partner's POST /payments of an etax invoice; its answer's status code. */
async function anotherPartnerPays(c: TestContext): Promise<number> {
  const { partner, invoice } = await partnerWithInvoice(c, 'etax');
  const res = await c.api(partner.apiKey, { method: 'POST', url: '/api/v1/payments', payload: { invoiceId: invoice.id } });
  return res.statusCode;
}

/** Each read answered `submitted` within the ministry timeout + 1 s (a bound on a hang, not a speed), from `source` when given. */
function expectAnsweredInTime(c: TestContext, reads: Read[], source?: 'live' | 'stored'): void {
  for (const read of reads) {
    expect(read.statusCode).toBe(200);
    expect(read.status).toBe('submitted');
    if (source) expect(read.source).toBe(source);
    expect(read.ms).toBeLessThanOrEqual(c.config.ministryTimeoutMs + 1000);
  }
}

describe('live status checks', () => {
  it('keeps a burst of reads and the confirmation job within the limit, one status call per payment at a time', async () => {
    const c = await context();
    const payments = await submittedPayments(c, 5);
    await setStatusFault(c, 'slow', 600);
    await resetCalls(c);
    // Every payment is due for the job too, which checks beside the reads.
    c.advance(c.config.confirmPollMs + 1000);
    const [reads] = await Promise.all([burst([c], payments, 60), confirmationPass(c)]);
    expectAnsweredInTime(c, reads);
    const calls = await statusCalls(c);
    expect(calls.calls).toBeGreaterThan(0);
    expect(calls.maxInFlight).toBeLessThanOrEqual(LIMIT);
    expect(calls.maxInFlightPerPayment).toBe(1);
  });

  it('asks the ministry for every read, and waits out a check under way elsewhere rather than answer from it', async () => {
    const c = await context();
    const [p] = await submittedPayments(c, 1);
    if (!p) throw new Error('no payment');
    await resetCalls(c);
    expect(await timedRead(c, p)).toMatchObject({ status: 'submitted', source: 'live' });
    expect((await statusCalls(c)).calls).toBe(1);
    // A check that just ended was asked before this read came: it asks again.
    expect(await timedRead(c, p)).toMatchObject({ status: 'submitted', source: 'live' });
    expect((await statusCalls(c)).calls).toBe(2);

    // Another instance holds the payment's status-check lease: its check is under way, and what
    // it asked may be older than the read, so the read waits for it, and answers the stored
    // status when it does not end in time.
    const repo = createPaymentRepository(c.deps.db, c.now);
    const token = '00000000-0000-4000-8000-000000000001';
    const at = c.now();
    const other = await repo.claimStatusCheck({ id: p.id, at, leaseUntil: new Date(at.getTime() + 60_000), checkedBefore: at, token });
    expect(other?.id).toBe(p.id);
    const held = await timedRead(c, p);
    expect(held).toMatchObject({ status: 'submitted', source: 'stored' });
    expect(held.ms).toBeLessThanOrEqual(c.config.ministryTimeoutMs + 1000);
    expect((await statusCalls(c)).calls).toBe(2);

    expect(await repo.releaseStatusCheck(p.id, token, c.now())).toBe(true);

    // The confirmation job's check holds the lease while the ministry takes its time: a read
    // arriving meanwhile waits it out, then asks itself, after it (never two calls at once).
    await setStatusFault(c, 'slow', HELD_MS);
    await resetCalls(c);
    c.advance(c.config.confirmPollMs + 1000);
    const pass = confirmationPass(c);
    await asking(c, 1);
    const waiting = timedRead(c, p);
    expect(await waiting).toMatchObject({ status: 'submitted', source: 'live' });
    await pass;
    expect(await statusCalls(c)).toMatchObject({ calls: 2, maxInFlightPerPayment: 1 });
  });

  it('gives a read arriving while a check is asking a follow-up check, one shared by every read in that position', async () => {
    const c = await context();
    const [p] = await submittedPayments(c, 1);
    if (!p) throw new Error('no payment');
    // The ministry says what it knew when asked, 600 ms later.
    await setStatusFault(c, 'late', 600);
    await resetCalls(c);
    const first = timedRead(c, p);
    await asking(c, 1);
    // The citizen pays while the first check's question is answered `submitted`.
    expect((await approve(c, p.refNum)).statusCode).toBe(200);
    const later = await Promise.all([timedRead(c, p), timedRead(c, p), timedRead(c, p)]);
    // The first read's check was asked after it arrived: its answer is live, if older than the approval.
    expect(await first).toMatchObject({ status: 'submitted', source: 'live' });
    for (const read of later) expect(read).toMatchObject({ statusCode: 200, status: 'confirmed', source: 'live' });
    const calls = await statusCalls(c);
    expect(calls.calls).toBe(2);
    expect(calls.maxInFlightPerPayment).toBe(1);
    // Confirmed in the books now: no check, the stored status.
    expect(await timedRead(c, p)).toMatchObject({ status: 'confirmed', source: 'stored' });
    expect((await statusCalls(c)).calls).toBe(2);
  });

  it('serves a final answer of the check under way to the reads that arrived while it asked', async () => {
    const c = await context();
    const [p] = await submittedPayments(c, 1);
    if (!p) throw new Error('no payment');
    await setStatusFault(c, 'late', 600);
    expect((await approve(c, p.refNum)).statusCode).toBe(200);
    await resetCalls(c);
    const first = timedRead(c, p);
    await asking(c, 1);
    const later = await Promise.all([timedRead(c, p), timedRead(c, p)]);
    expect(await first).toMatchObject({ status: 'confirmed', source: 'live' });
    for (const read of later) expect(read).toMatchObject({ status: 'confirmed', source: 'live' });
    expect((await statusCalls(c)).calls).toBe(1);
  });

  it('waits up to CONFIRM_LIVE_WAIT_MS for a slot when the limit is full, then answers the stored status', async () => {
    const c = await context({ confirmLiveWaitMs: 500 });
    const [a, b, p] = await submittedPayments(c, 3);
    if (!a || !b || !p) throw new Error('no payment');
    // Two slow checks fill etax's limit (2) for 1.5 s: the third read finds no slot within 500 ms.
    await setStatusFault(c, 'slow', 1500);
    await resetCalls(c);
    const filling = Promise.all([timedRead(c, a), timedRead(c, b)]);
    await asking(c, 2);
    const starved = await timedRead(c, p);
    expect(starved).toMatchObject({ status: 'submitted', source: 'stored' });
    // It gave up while both slow checks still held their slots, and asked nothing.
    expect(await statusCalls(c)).toMatchObject({ calls: 2, inFlight: 2 });
    for (const read of await filling) expect(read).toMatchObject({ status: 'submitted', source: 'live' });
    expect((await statusCalls(c)).calls).toBe(2);

    // A slot frees within the wait: the read takes it and answers live.
    await setStatusFault(c, 'slow', 300);
    await resetCalls(c);
    const short = Promise.all([timedRead(c, a), timedRead(c, b)]);
    await asking(c, 2);
    expect(await timedRead(c, p)).toMatchObject({ status: 'submitted', source: 'live' });
    await short;
    const calls = await statusCalls(c);
    expect(calls.calls).toBe(3);
    expect(calls.maxInFlight).toBeLessThanOrEqual(LIMIT);
  });

  it('answers 404 for a payment that is not the partner\'s, without a status source', async () => {
    const c = await context();
    const [p] = await submittedPayments(c, 1);
    if (!p) throw new Error('no payment');
    const res = await getPayment(c, p.apiKey, '00000000-0000-4000-8000-0000000000ff');
    expect(res.statusCode).toBe(404);
    expect(res.headers['x-status-source']).toBeUndefined();
  });

  it("never lets status calls timing out refuse another partner's POST /payments to the same system", async () => {
    const c = await context({ circuitBreaker: { failureThreshold: 2, openMs: 60_000 }, ministryTimeoutMs: SHORT_TIMEOUT_MS });
    const payments = await submittedPayments(c, 3);
    await setStatusFault(c, 'timeout');
    await resetCalls(c);
    const [reads, duringBurst] = await Promise.all([burst([c], payments, 12), anotherPartnerPays(c)]);
    expect(duringBurst).toBe(201);
    expectAnsweredInTime(c, reads);
    expect((await statusCalls(c)).maxInFlight).toBeLessThanOrEqual(LIMIT);

    // The status calls timed out often enough to open their circuit...
    const [p] = payments;
    if (!p) throw new Error('no payment');
    await expect(c.deps.ministries.etax.getPayment({ paymentId: p.id, refNum: 'any' })).rejects.toMatchObject({ kind: 'circuit-open' });
    // ...and reads answer the stored status without asking the ministry, while submissions
    // still go through.
    await resetCalls(c);
    const open = await burst([c], payments, 6);
    expectAnsweredInTime(c, open, 'stored');
    expect((await statusCalls(c)).calls).toBe(0);
    expect(await anotherPartnerPays(c)).toBe(201);
  });

  it('does not hold a read past the ministry timeout + 1 s when the check before its follow-up outlives it', async () => {
    const c = await context({ ministryTimeoutMs: SHORT_TIMEOUT_MS });
    const [p] = await submittedPayments(c, 1);
    if (!p) throw new Error('no payment');
    await setStatusFault(c, 'timeout');
    await resetCalls(c);
    const first = timedRead(c, p);
    // Arrives while the first read's check asks, which the ministry holds until its timeout: its
    // follow-up asks after that, and is held too.
    await asking(c, 1);
    const reads = await Promise.all([first, timedRead(c, p)]);
    expectAnsweredInTime(c, reads, 'stored');
    const calls = await statusCalls(c);
    expect(calls.calls).toBe(2);
    expect(calls.maxInFlightPerPayment).toBe(1);
  });

  it('answers confirmed, live, right after the approval while the confirmation job checks every CONFIRM_POLL_MS', async () => {
    const c = await context({ confirmPollMs: 500, confirmBackoffMaxMs: 500 });
    const jobs = c.deps.startJobs();
    const activity = recordActivity(jobs);
    try {
      const payments = await submittedPayments(c, 3);
      // Status answers say what the ministry knew when asked, a little later: a job check asked
      // before the approval answers `submitted`.
      await setStatusFault(c, 'late', 150);
      // The job checks every payment in the background: each check in flight or just ended.
      await expect.poll(async () => (await c.deps.db.selectFrom('payments').select('status_checked_at').where('id', 'in', payments.map((p) => p.id)).execute()).every((r) => r.status_checked_at !== null), { timeout: 5000 }).toBe(true);
      for (const p of payments) {
        expect((await approve(c, p.refNum)).statusCode).toBe(200);
        const read = await timedRead(c, p);
        expect(read).toMatchObject({ statusCode: 200, status: 'confirmed', source: 'live' });
        expect(read.ms).toBeLessThanOrEqual(c.config.ministryTimeoutMs + 1000);
        // The next read comes after another pass of the job, at another point of its checks.
        const readAt = activity.mark();
        await expect.poll(() => activity.count('completed', 'payment-confirmation', readAt), { timeout: 10_000 }).toBeGreaterThan(0);
      }
    } finally {
      await jobs.stop();
    }
  });
});

describe('status-check lease', () => {
  const TOKEN_A = '00000000-0000-4000-8000-00000000000a';
  const TOKEN_B = '00000000-0000-4000-8000-00000000000b';

  async function leaseSetup() {
    const c = await context();
    const [p] = await submittedPayments(c, 1);
    if (!p) throw new Error('no payment');
    const repo = createPaymentRepository(c.deps.db, c.now);
    const live = (token: string, at: Date) => repo.claimStatusCheck({ id: p.id, at, leaseUntil: new Date(at.getTime() + 10_000), checkedBefore: at, token });
    // Far enough on that the payment is due for the job whatever its schedule.
    const jobClaim = async (at: Date) => (await repo.claimDue(at, new Date(at.getTime() + 10_000), { etax: 10 })).find((row) => row.id === p.id) ?? null;
    return { c, p, repo, live, jobClaim };
  }

  it('gives a payment to one of two live reads claiming it at once, on any instance', async () => {
    const { c, live } = await leaseSetup();
    const at = c.now();
    const claims = await Promise.all([live(TOKEN_A, at), live(TOKEN_B, at)]);
    expect(claims.filter((claim) => claim !== null)).toHaveLength(1);
  });

  it('keeps the confirmation job and a live read from checking one payment at the same time', async () => {
    const { c, p, repo, live, jobClaim } = await leaseSetup();
    const later = new Date(c.now().getTime() + POLL_MS * 2);
    expect(await live(TOKEN_A, later)).not.toBeNull();
    expect(await jobClaim(later)).toBeNull();
    expect(await repo.releaseStatusCheck(p.id, TOKEN_A, later)).toBe(true);

    const job = await jobClaim(later);
    expect(job).not.toBeNull();
    expect(await live(TOKEN_B, later)).toBeNull();
    // The job's lease ran out (it stalled) and a read took the payment: the job's late reschedule
    // is its own to make, but leaves the read's lease alone.
    const afterJobLease = new Date(later.getTime() + 20_000);
    expect(await live(TOKEN_B, afterJobLease)).not.toBeNull();
    expect(await repo.reschedule(p.id, new Date(afterJobLease.getTime() + POLL_MS), job?.lease_token ?? -1)).toBe(true);
    const row = await c.deps.db.selectFrom('payments').select(['status_check_token', 'status_check_until']).where('id', '=', p.id).executeTakeFirstOrThrow();
    expect(row.status_check_token).toBe(TOKEN_B);
    expect(row.status_check_until?.getTime()).toBeGreaterThan(afterJobLease.getTime());
    // A read whose lease was taken from it changes nothing when it lets go.
    expect(await repo.releaseStatusCheck(p.id, TOKEN_A, afterJobLease)).toBe(false);
  });
});

const shared = testConfig();
describe.skipIf(!shared.databaseUrl)('live status checks on two instances (shared PostgreSQL)', { tags: ['postgres'] }, () => {
  it('keeps reads and both confirmation jobs to one status call per payment and each instance within its limit', async () => {
    const schema = `t_${randomBytes(6).toString('hex')}`;
    try {
      const a = await context({}, { reuseSchema: schema });
      const b = await context({}, { reuseSchema: schema, ministryUrl: a.simulatorUrl });
      const payments = await submittedPayments(a, 8);
      await setStatusFault(a, 'slow', 1000);
      await resetCalls(a);
      for (const c of [a, b]) c.advance(a.config.confirmPollMs + 1000);
      const [reads, posted] = await Promise.all([
        burst([a, b], payments, 80),
        (async () => {
          const { partner, invoice } = await partnerWithInvoice(a, 'etax');
          return payOk(b, partner.apiKey, { invoiceId: invoice.id });
        })(),
        confirmationPass(a),
        confirmationPass(b),
      ]);
      expect(posted.status).toBe('submitted');
      expectAnsweredInTime(a, reads);
      const calls = await statusCalls(a);
      expect(calls.calls).toBeGreaterThan(0);
      expect(calls.maxInFlightPerPayment).toBe(1);
      expect(calls.maxInFlight).toBeLessThanOrEqual(2 * LIMIT);
    } finally {
      for (const c of contexts.splice(0)) await c.close();
      if (shared.databaseUrl) await dropSchema(shared.databaseUrl, schema);
    }
  });
});
