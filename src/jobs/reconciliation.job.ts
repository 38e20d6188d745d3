import type { ReconciliationService } from '../services/reconciliation.service.js';
import type { Job } from '../work/job-runner.js';

/**
 * The daily reconciliation and its retries. Each pass is bounded (a few day-and-source pairs) and
 * safe on several instances: a pair is reconciled only by the instance whose lease took it. A
 * pass renews its lease as it works through a day; its deadline counts from the last renewal.
 */
export function createReconciliationJob(deps: { service: ReconciliationService; intervalMs: number; deadlineMs?: number }): Job {
  return {
    name: 'reconciliation',
    intervalMs: deps.intervalMs,
    deadlineMs: deps.deadlineMs,
    progress: () => deps.service.lastProgressAt(),
    async run() {
      await deps.service.runDue();
    },
  };
}
