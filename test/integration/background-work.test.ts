import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestContext, type TestContext } from '../helpers/test-context.js';
import { approve, partnerWithPayment } from '../helpers/api.js';
import type { RunningJobs } from '../../src/work/job-runner.js';

/*
 * The job runner as a process runs it: passes on their intervals, as background work. On the
 * embedded database that work waits behind requests for the one connection; it must still finish.
 */
let ctx: TestContext;
let jobs: RunningJobs | undefined;

beforeAll(async () => {
  ctx = await createTestContext({ config: { confirmPollMs: 100, webhookPollMs: 50 } });
});
afterAll(async () => {
  await jobs?.stop();
  await ctx.close();
});

describe('background work', () => {
  it('confirms approved payments on its own while requests keep the database busy', async () => {
    jobs = ctx.deps.startJobs();
    const made = await Promise.all([partnerWithPayment(ctx, 'mof'), partnerWithPayment(ctx, 'etax'), partnerWithPayment(ctx, 'police')]);
    for (const { invoice } of made) expect((await approve(ctx, invoice.refNum)).statusCode).toBe(200);
    const ids = made.map((m) => m.payment.id);
    const statuses = async () =>
      (await ctx.deps.db.selectFrom('payments').select('status').where('id', 'in', ids).execute()).map((r) => r.status);
    let reads = 0;
    await expect
      .poll(
        async () => {
          // Requests the whole time: each poll also reads a summary through the API.
          for (const { partner } of made) {
            const res = await ctx.api(partner.apiKey, { method: 'GET', url: '/api/v1/reports/summary' });
            expect(res.statusCode).toBe(200);
            reads++;
          }
          return statuses();
        },
        { timeout: 15_000, interval: 20 },
      )
      .toEqual(['confirmed', 'confirmed', 'confirmed']);
    expect(reads).toBeGreaterThan(0);
  });
});
