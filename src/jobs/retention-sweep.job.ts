import type { Job } from '../work/job-runner.js';
import type { IdempotencyRepository } from '../db/repositories/idempotency.repository.js';
import type { RetentionRepository } from '../db/repositories/retention.repository.js';
import type { Logger } from '../domain/logger.port.js';
import type { Clock } from '../domain/clock.port.js';

export interface RetentionSettings {
  sweepMs: number;
  /** Most rows deleted from each table in one pass. */
  batchSize: number;
  webhookAttemptMs: number;
  eventMs: number;
}

/**
 * Deletes expired idempotency keys, old attempts of finished webhook deliveries, and old events
 * whose deliveries are all finished. A pass deletes at most `batchSize` rows per table, so it
 * stays short however large the backlog; a backlog shrinks by a batch per pass. Cut-offs come
 * from the service's clock (the one that set expires_at and the attempts' created_at).
 */
export function createRetentionSweepJob(deps: {
  idempotency: IdempotencyRepository;
  retention: RetentionRepository;
  settings: RetentionSettings;
  /** A pass past this is abandoned (Job.deadlineMs). */
  deadlineMs?: number;
  log: Logger;
  now: Clock;
}): Job {
  const { now } = deps;
  const { settings } = deps;
  return {
    name: 'retention-sweep',
    intervalMs: settings.sweepMs,
    deadlineMs: deps.deadlineMs,
    async run() {
      const at = now().getTime();
      const idempotencyKeys = await deps.idempotency.purgeExpired(new Date(at), settings.batchSize);
      const swept = await deps.retention.sweep(
        { attemptsBefore: new Date(at - settings.webhookAttemptMs), eventsBefore: new Date(at - settings.eventMs) },
        settings.batchSize,
      );
      const deleted = { idempotencyKeys, ...swept };
      if (Object.values(deleted).some((n) => n > 0)) deps.log.info({ deleted }, 'retention sweep');
    },
  };
}
