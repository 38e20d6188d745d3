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
