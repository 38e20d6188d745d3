import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { createTestContext } from '../helpers/test-context.js';
import { capturingLogger } from '../helpers/log-capture.js';

describe('shutdown', () => {
  it('stops the background jobs before it closes the database they use', async () => {
    const { logger, lines } = capturingLogger();
    const ctx = await createTestContext({ logger, config: { confirmPollMs: 40, webhookPollMs: 20, retention: { sweepMs: 1000, batchSize: 10, webhookAttemptMs: 86_400_000, eventMs: 86_400_000 } } });
    ctx.deps.startJobs();
    await sleep(200);
    await ctx.close();
    // Several of the jobs' intervals: a job left running would now fail against the closed database.
    await sleep(300);
    expect(lines.filter((l) => l.level >= 50).map((l) => l.msg)).toEqual([]);
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
