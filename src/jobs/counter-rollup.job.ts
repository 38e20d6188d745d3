import type { Job } from '../work/job-runner.js';
import type { CounterRepository } from '../db/repositories/counter.repository.js';
import type { Logger } from '../domain/logger.port.js';

export interface CounterRollupSettings {
  intervalMs: number;
  /** Most deltas folded by one statement. */
  batchSize: number;
}

/** Batches one pass may fold: enough to catch up after a burst, few enough that a pass stays short. */
const MAX_BATCHES_PER_PASS = 10;

/**
 * Folds the counters' deltas into their totals, so readers add a short tail of deltas to one row
 * per bucket. Nothing is lost if a pass fails or never runs: readers count the deltas as well.
 */
export function createCounterRollupJob(deps: { counters: CounterRepository; settings: CounterRollupSettings; log: Logger; deadlineMs?: number }): Job {
  const { batchSize } = deps.settings;
  return {
    name: 'counter-rollup',
    intervalMs: deps.settings.intervalMs,
    deadlineMs: deps.deadlineMs,
    async run() {
      let folded = 0;
      for (let batch = 0; batch < MAX_BATCHES_PER_PASS; batch++) {
        const n = await deps.counters.rollup(batchSize);
        folded += n;
        if (n < batchSize) break;
      }
      if (folded >= batchSize) deps.log.info({ folded }, 'counter roll-up');
    },
  };
}
