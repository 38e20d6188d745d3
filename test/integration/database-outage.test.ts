import { randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestContext, type TestContext } from '../helpers/test-context.js';
import { capturingLogger } from '../helpers/log-capture.js';
import { testConfig } from '../helpers/test-config.js';
import { startDatabaseProxy, type TcpProxy } from '../helpers/tcp-proxy.js';
import { getPayment, partnerWithInvoice, partnerWithPayment, pay } from '../helpers/api.js';
import type { RunningJobs } from '../../src/work/job-runner.js';
import { recordActivity } from '../helpers/job-activity.js';
import { queryOnce } from '../helpers/pg-query.js';
import { isDatabaseUnavailable } from '../../src/db/pg-error.js';

/*
 * The service's PostgreSQL connections run through a proxy this suite cuts: to the service that
 * is a database restart (every connection reset, new ones refused), while the shared server the
 * other suites use goes on.
 */
const { databaseUrl } = testConfig();
const OUTAGE_LINE = 'database unavailable: background work paused, requests that need it answer 503 until it is back';
/** Every job's interval, so that each one ticks many times during the outage. */
const TICK_MS = 100;

describe.skipIf(!databaseUrl)('database outage', { tags: ['postgres'] }, () => {
  let proxy: TcpProxy;
  let ctx: TestContext;
  let jobs: RunningJobs | undefined;
  const { logger, lines } = capturingLogger();
  const said = (msg: string) => lines.filter((l) => l.msg === msg).length;

  beforeAll(async () => {
    const started = await startDatabaseProxy(databaseUrl as string);
    proxy = started.proxy;
    const viaProxy = started.url;
    const base = testConfig();
    ctx = await createTestContext({
      logger,
      config: {
        databaseUrl: viaProxy,
        dbConnectTimeoutMs: 1000,
        confirmPollMs: 4 * TICK_MS,
        webhookPollMs: TICK_MS,
        webhookHealthCheckMs: TICK_MS,
        eventPositionMs: TICK_MS,
        counterRollup: { ...base.counterRollup, intervalMs: TICK_MS },
        retention: { ...base.retention, sweepMs: TICK_MS },
        reconciliation: { ...base.reconciliation, pollMs: TICK_MS },
      },
    });
  });

  afterAll(async () => {
    await jobs?.stop();
    proxy.restore();
    await ctx?.close();
    await proxy?.close();
  });

  it('answers 503 with Retry-After while the database is away, pauses background work quietly, and serves again once it is back', async () => {
    const { partner, payment } = await partnerWithPayment(ctx, 'mof');
    const second = await partnerWithInvoice(ctx, 'etax');
    jobs = ctx.deps.startJobs();
    const activity = recordActivity(jobs);
    const everyJob = ctx.deps.jobs.map((j) => j.name).sort();
    // Every job works on the database before it goes.
    await expect.poll(() => activity.jobsThat('completed'), { timeout: 20_000 }).toEqual(everyJob);

    proxy.cut();

    const read = await getPayment(ctx, partner.apiKey, payment.id);
    expect(read.statusCode, read.body).toBe(503);
    expect(read.headers['retry-after']).toBe('5');
    expect(read.json()).toEqual({ statusCode: 503, error: 'Service Unavailable', message: 'Service temporarily unavailable; retry later', code: 'service_unavailable', requestId: read.headers['x-request-id'] });
    const cut = await pay(ctx, second.partner.apiKey, { invoiceId: second.invoice.id }, { 'x-idempotency-key': 'outage-1' });
    expect(cut.statusCode, cut.body).toBe(503);

    const ready = await ctx.app.inject({ method: 'GET', url: '/api/v1/health/ready' });
    expect(ready.statusCode).toBe(503);
    expect(ready.json()).toMatchObject({ status: 'unavailable', db: 'down' });
    expect((await ctx.app.inject({ method: 'GET', url: '/api/v1/health/live' })).statusCode).toBe(200);
    const metrics = await ctx.admin.inject({ method: 'GET', url: '/metrics' });
    expect(metrics.statusCode).toBe(200);

    await expect.poll(() => said(OUTAGE_LINE)).toBe(1);
    expect(metrics.body).toMatch(/^database_up 0$/m);
    // From the outage on, every job ticks more than once, and each tick sits the outage out (a
    // probe at most) rather than start a pass that would fail against the missing database.
    const down = activity.mark();
    const ticks = (job: string) => activity.count('sat-out', job, down) + activity.count('started', job, down);
    await expect.poll(() => everyJob.filter((job) => ticks(job) < 2), { timeout: 20_000 }).toEqual([]);
    expect(activity.jobsThat('started', down)).toEqual([]);
    expect(ctx.deps.dbOutage.down).toBe(true);

    proxy.restore();
    await expect.poll(async () => (await ctx.app.inject({ method: 'GET', url: '/api/v1/health/ready' })).statusCode, { timeout: 10_000 }).toBe(200);
    const again = await getPayment(ctx, partner.apiKey, payment.id);
    expect(again.statusCode, again.body).toBe(200);
    // The payment refused with 503 left nothing behind: the same key now makes it.
    const paid = await pay(ctx, second.partner.apiKey, { invoiceId: second.invoice.id }, { 'x-idempotency-key': 'outage-1' });
    expect(paid.statusCode, paid.body).toBe(201);
    await expect.poll(() => said('database available again: background work resumed')).toBe(1);
    expect((await ctx.admin.inject({ method: 'GET', url: '/metrics' })).body).toMatch(/^database_up 1$/m);
    // Every job works on the database again.
    const back = activity.mark();
    await expect.poll(() => activity.jobsThat('completed', back), { timeout: 20_000 }).toEqual(everyJob);

    expect(said(OUTAGE_LINE)).toBe(1);
    expect(lines.filter((l) => l.level >= 50).map((l) => l.msg)).toEqual([]);
  });
});

/*
 * One connection ends while the database stays: the server's idle limit ends a transaction a
 * paused process held open (the service sets it to the query deadline), or an operator kills a
 * connection. Only that connection is gone; the process must not take it for an outage.
 */
describe.skipIf(!databaseUrl)('a connection ended while the database answers', { tags: ['postgres'] }, () => {
  const ENDED_LINE = 'database connection ended; the database still answers, so only that connection is gone';
  // Long enough that no statement of a loaded machine outlives it, short enough to wait out.
  const QUERY_DEADLINE_MS = 1000;
  // Names this context's connections, so that the kill below ends no other suite's.
  const APPLICATION = `ended_${randomBytes(4).toString('hex')}`;
  let ctx: TestContext;
  const { logger, lines } = capturingLogger();
  const said = (msg: string) => lines.filter((l) => l.msg === msg).length;

  beforeAll(async () => {
    const url = new URL(databaseUrl as string);
    url.searchParams.set('application_name', APPLICATION);
    ctx = await createTestContext({ logger, config: { databaseUrl: url.toString(), dbQueryTimeoutMs: QUERY_DEADLINE_MS } });
  });

  afterAll(async () => {
    await ctx?.close();
  });

  it('a transaction held open past the server\'s idle limit fails alone: no outage, and the next request is served', async () => {
    const { partner, payment } = await partnerWithPayment(ctx, 'mof');
    let pid = 0;
    const held = ctx.deps.db.transaction().execute(async (trx) => {
      pid = (await sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(trx)).rows[0]?.pid ?? 0;
      // What a process paused mid-transaction looks like to the server: nothing sent until the
      // server has ended the connection for it.
      await expect
        .poll(async () => (await queryOnce(databaseUrl as string, 'SELECT count(*)::int AS n FROM pg_stat_activity WHERE pid = $1', [pid]))[0]?.n, { timeout: 20_000, interval: 100 })
        .toBe(0);
      await sql`select 1`.execute(trx);
    });
    const failure = await held.then(() => null, (err: unknown) => err);
    expect(pid).toBeGreaterThan(0);
    expect(isDatabaseUnavailable(failure), String(failure)).toBe(true);

    const read = await getPayment(ctx, partner.apiKey, payment.id);
    expect(read.statusCode, read.body).toBe(200);
    await expect.poll(() => said(ENDED_LINE) + said(OUTAGE_LINE), { timeout: 5000 }).toBeGreaterThanOrEqual(1);
    expect(said(OUTAGE_LINE)).toBe(0);
    expect(ctx.deps.dbOutage.down).toBe(false);
    expect((await ctx.admin.inject({ method: 'GET', url: '/metrics' })).body).toMatch(/^database_up 1$/m);
  });

  it("an operator's kill of the pool's connections and the readiness ping's: no outage, readiness stays up", async () => {
    const { partner, payment } = await partnerWithPayment(ctx, 'mof');
    expect((await ctx.app.inject({ method: 'GET', url: '/api/v1/health/ready' })).statusCode).toBe(200);
    const ended = said(ENDED_LINE);
    const admin = new pg.Client({ connectionString: databaseUrl as string });
    await admin.connect();
    try {
      const pool = await poolBackends(3);
      const { rows } = await admin.query<{ ended: boolean }>(`SELECT pg_terminate_backend(pid) AS ended FROM pg_stat_activity WHERE application_name = $1`, [APPLICATION]);
      // The pool's connections and the readiness ping's own.
      expect(rows.filter((r) => r.ended).length).toBeGreaterThan(pool.length);
    } finally {
      await admin.end();
    }
    await expect.poll(() => said(ENDED_LINE) + said(OUTAGE_LINE), { timeout: 5000 }).toBeGreaterThan(ended);
    expect(said(OUTAGE_LINE)).toBe(0);
    expect((await ctx.app.inject({ method: 'GET', url: '/api/v1/health/ready' })).statusCode).toBe(200);
    const read = await getPayment(ctx, partner.apiKey, payment.id);
    expect(read.statusCode, read.body).toBe(200);
    expect(said(OUTAGE_LINE)).toBe(0);
    expect(ctx.deps.dbOutage.down).toBe(false);
    expect(lines.filter((l) => l.level >= 50).map((l) => l.msg)).toEqual([]);
  });

  /** The backend pids of `n` of the pool's connections, held at once so each is a different one. */
  async function poolBackends(n: number): Promise<number[]> {
    const pids: number[] = [];
    let arrived = 0;
    let release: () => void = () => undefined;
    const all = new Promise<void>((r) => (release = r));
    await Promise.all(
      Array.from({ length: n }, () =>
        ctx.deps.db.transaction().execute(async (trx) => {
          pids.push((await sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(trx)).rows[0]?.pid ?? 0);
          if (++arrived === n) release();
          await all;
        }),
      ),
    );
    return pids;
  }
});
