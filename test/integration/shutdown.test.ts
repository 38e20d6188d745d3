import { describe, expect, it } from 'vitest';
import { createTestContext } from '../helpers/test-context.js';
import { capturingLogger } from '../helpers/log-capture.js';
import { testConfig } from '../helpers/test-config.js';
import { lookupRef, payOk } from '../helpers/api.js';
import { invoiceFixture } from '../helpers/fixtures.js';
import { listenLocal } from '../helpers/listen-local.js';
import { loopTicked, recordActivity } from '../helpers/job-activity.js';
import { buildSimulator } from '../../simulator/simulator.app.js';
import type { CallReport } from '../../simulator/call-tracker.js';

/** Every loop's interval: short, so each job passes soon and the marker after the close comes soon. */
const TICK_MS = 50;
/** How long the ministry holds the status call in flight at the close: the close begins well within it. */
const HELD_MS = 1500;

describe('shutdown', () => {
  it('stops the background jobs, and waits for their work in flight, before it closes the database they use', async ({ onTestFinished }) => {
    const { logger, lines } = capturingLogger();
    // A ministry of the test's own outlives the context, so what it saw of the close is read after it.
    const invoice = invoiceFixture('mof', 'SHUTDOWN-1');
    const ministry = await buildSimulator({ fixtures: { invoices: [invoice] }, autoApproveMs: 0 });
    onTestFinished(() => ministry.close());
    const control = (method: 'GET' | 'POST', url: string, payload?: object) => ministry.inject({ method, url: `/__control${url}`, payload });
    const statusCalls = async () => (await control('GET', '/calls?source=mof&operation=status')).json<CallReport>();
    const ctx = await createTestContext({
      logger,
      ministryUrl: await listenLocal(ministry),
      config: {
        confirmPollMs: 4 * TICK_MS,
        confirmBackoffMaxMs: 4 * TICK_MS,
        webhookPollMs: TICK_MS,
        webhookHealthCheckMs: TICK_MS,
        eventPositionMs: TICK_MS,
        counterRollup: { intervalMs: TICK_MS, batchSize: 10 },
        retention: { sweepMs: TICK_MS, batchSize: 10, webhookAttemptMs: 86_400_000, eventMs: 86_400_000 },
        reconciliation: { ...testConfig().reconciliation, pollMs: TICK_MS },
      },
    });
    const partner = await ctx.partner();
    const payment = await payOk(ctx, partner.apiKey, { invoiceId: (await lookupRef(ctx, partner.apiKey, invoice.refNum)).id });
    const jobs = ctx.deps.startJobs();
    const activity = recordActivity(jobs);

    // Every job has run a pass against the database, the payment's checks among them.
    await expect.poll(() => activity.jobsThat('completed'), { timeout: 20_000 }).toEqual(ctx.deps.jobs.map((j) => j.name).sort());
    await expect.poll(async () => (await statusCalls()).calls, { timeout: 20_000 }).toBeGreaterThan(0);

    // The ministry holds the next check's answer; the citizen pays while it is held, so the answer
    // confirms the payment. The reset counts only checks begun after it: one begun before, held or
    // not, could answer before the citizen pays and leave no check in flight at the close.
    expect((await control('POST', '/faults', { source: 'mof', operation: 'status', mode: 'slow', delayMs: HELD_MS })).statusCode).toBe(200);
    expect((await control('POST', '/calls/reset')).statusCode).toBe(200);
    await expect.poll(async () => await statusCalls(), { timeout: 20_000 }).toMatchObject({ calls: 1, inFlight: 1 });
    expect((await control('POST', '/approve', { refNum: invoice.refNum })).statusCode).toBe(200);

    // Read through the service's own database the moment its jobs have stopped: a read that fails
    // if the database closed first, and sees whether the check in flight had ended.
    const stop = jobs.stop.bind(jobs);
    let atStop: { status: string } | { failed: string } | undefined;
    jobs.stop = async () => {
      await stop();
      atStop = await ctx.deps.db
        .selectFrom('payments')
        .select('status')
        .where('id', '=', payment.id)
        .executeTakeFirstOrThrow()
        .then((row) => ({ status: row.status }), (err: unknown) => ({ failed: String(err) }));
    };
    await ctx.close();
    const closedAt = activity.mark();
    expect(atStop).toEqual({ status: 'confirmed' });
    // The one held call was answered, not cut off, and nothing asked again after it.
    expect(await statusCalls()).toMatchObject({ calls: 1, inFlight: 0 });

    // A loop of the same runner, started after the close, ticks twice at the jobs' interval: a job
    // still running would have ticked by then, and failed against the closed database.
    await loopTicked(TICK_MS, 2);
    expect(activity.seen.slice(closedAt)).toEqual([]);
    expect(activity.count('failed')).toBe(0);
    // A check cut off, or one failing on a closed database, logs a warning.
    expect(lines.filter((l) => l.level >= 40).map((l) => l.msg)).toEqual([]);
  });
});

describe('after shutdown', () => {
  it("keeps no metric that reads the closed database: prom-client keeps the registry for the process's life", async () => {
    const ctx = await createTestContext();
    expect(ctx.deps.metrics.registry.getMetricsAsArray().length).toBeGreaterThan(0);
    await ctx.close();
    // Its GC metric observes until the process exits and holds the registry; a gauge left in it
    // would hold the database (PGlite's 100 MB of WebAssembly memory) as long.
    expect(ctx.deps.metrics.registry.getMetricsAsArray()).toEqual([]);
  });
});
