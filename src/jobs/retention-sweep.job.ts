import type { Job } from '../work/job-runner.js';
import type { IdempotencyRepository } from '../db/repositories/idempotency.repository.js';
import type { RetentionRepository } from '../db/repositories/retention.repository.js';
import type { PartitionRepository } from '../db/repositories/partition.repository.js';
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
 * Keeps what only grows within its retention. The monthly partitions of events, deliveries,
 * attempts and pushes: the months ahead are created, and a month wholly past retention is
 * detached and dropped whole, unless a delivery or push in it is unfinished (the next pass looks
 * again). Rows go one by one only from the legacy partitions (the tables as they were before
 * partitioning, until they are past retention as a whole) and from the idempotency keys, which
 * live for hours; those deletes take at most `batchSize` rows per table a pass, so a pass stays
 * short however large the backlog. Cut-offs come from the service's clock (the one that set
 * expires_at); the months ahead from the database's (the one rows are stamped with).
 */
export function createRetentionSweepJob(deps: {
  idempotency: IdempotencyRepository;
  retention: RetentionRepository;
  partitions: PartitionRepository;
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
      const cutoffs = { attemptsBefore: new Date(at - settings.webhookAttemptMs), eventsBefore: new Date(at - settings.eventMs) };
      const created = await deps.partitions.createAhead();
      const { dropped, kept } = await deps.partitions.dropExpired(cutoffs);
      // `kept`: months past retention that an unfinished delivery or push still holds.
      if (created.length > 0 || dropped.length > 0) deps.log.info({ created, dropped, kept }, 'partitions');
      const idempotencyKeys = await deps.idempotency.purgeExpired(new Date(at), settings.batchSize);
      const legacy = await deps.partitions.legacyTables();
      const swept = await deps.retention.sweep(legacy, cutoffs, settings.batchSize);
      const deleted = { idempotencyKeys, ...swept };
      if (Object.values(deleted).some((n) => n > 0)) deps.log.info({ deleted }, 'retention sweep');
    },
  };
}
