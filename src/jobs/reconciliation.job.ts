import type { ReconciliationService } from '../services/reconciliation.service.js';
import type { Job } from './job-runner.js';

/**
 * The daily reconciliation and its retries. Each pass is bounded (a few day-and-source pairs) and
 * safe on several instances: a pair is reconciled only by the instance whose lease took it.
 */
export function createReconciliationJob(deps: { service: ReconciliationService; intervalMs: number }): Job {
  return {
    name: 'reconciliation',
    intervalMs: deps.intervalMs,
    async run() {
      await deps.service.runDue();
    },
  };
}
