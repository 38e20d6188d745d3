import type { Job } from '../work/job-runner.js';
import type { CaseService } from '../services/case.service.js';
import type { Logger } from '../domain/logger.port.js';

export interface CaseJob extends Job {
  /** Runs a pass now (a case just opened), unless one is under way; never rejects. */
  nudge(): void;
  stop(): Promise<void>;
}

/**
 * Gathers the evidence of new cases (answering a paid_not_updated one the ministry confirms) and
 * escalates the unresolved ones past due. A pass is bounded (a batch of each); the evidence is
 * claimed under a lease and the escalation skips rows another instance holds, so passes here and
 * on other instances never do a case's work twice. A nudge joins the pass under way rather than
 * start a second one.
 */
export function createCaseJob(deps: { service: Pick<CaseService, 'gatherPending' | 'escalateDue'>; intervalMs: number; deadlineMs?: number; log: Logger }): CaseJob {
  let current: Promise<void> | null = null;
  let stopped = false;

  const run = (): Promise<void> => {
    if (stopped) return Promise.resolve();
    current ??= (async () => {
      try {
        await deps.service.gatherPending();
        await deps.service.escalateDue();
      } finally {
        current = null;
      }
    })();
    return current;
  };

  return {
    name: 'cases',
    intervalMs: deps.intervalMs,
    deadlineMs: deps.deadlineMs,
    run,
    nudge() {
      run().catch((err: unknown) => deps.log.warn({ err }, 'case pass failed; the next one tries again'));
    },
    abandon() {
      current = null;
    },
    async stop() {
      stopped = true;
      await current?.catch(() => undefined);
    },
  };
}
