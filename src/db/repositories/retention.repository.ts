import { sql, type RawBuilder } from 'kysely';
import type { Db } from '../database.js';
import type { StoredDeliveryStatus } from '../db.types.js';
import type { LegacyTables } from './partition.repository.js';

/** Deliveries nothing will send again; anything else (pending, or a state added later) is kept. */
const TERMINAL: readonly StoredDeliveryStatus[] = ['delivered', 'failed', 'canceled'];

export interface RetentionCutoffs {
  /** Attempts of finished deliveries created before this go. */
  attemptsBefore: Date;
  /** Events created before this go, with their deliveries, once every delivery is finished. */
  eventsBefore: Date;
}

export interface RetentionResult {
  attempts: number;
  deliveries: number;
  events: number;
}

/**
 * Bounded deletes for what is left of the tables as they were before monthly partitions: their
 * legacy partitions (src/db/partition-move.ts) hold every row up to the cutover, and lose their old
 * rows here, row by row, until the whole partition is past retention and is dropped. Monthly
 * partitions are never swept row by row: they go whole (the partition repository). Every stage
 * walks its table from the oldest row by the created_at index and stops after `limit` rows, so a
 * pass costs the same whatever the history holds; rows are picked with FOR UPDATE SKIP LOCKED, so
 * instances sweeping at once share the work instead of queueing behind each other, and a pass
 * never holds many locks. The picks are MATERIALIZED: as an IN subquery the planner may rescan
 * them per row, and a rescan skips the rows this statement has just deleted and picks more,
 * past the limit.
 */
export function createRetentionRepository(db: Db) {
  // Literals, not parameters: the planner matches them to the partial index of migration 008.
  const terminal = sql.raw(TERMINAL.map((s) => `'${s}'`).join(', '));

  async function deleteCount(query: RawBuilder<unknown>): Promise<number> {
    const res = await query.execute(db);
    return Number(res.numAffectedRows ?? 0);
  }

  /** The oldest legacy events past retention whose deliveries are all finished: the ones that may go. */
  async function expiredEvents(events: string, before: Date, limit: number): Promise<string[]> {
    const { rows } = await sql<{ id: string }>`
      SELECT e.id FROM ${sql.table(events)} e
      WHERE e.created_at < ${before}::timestamptz
        AND NOT EXISTS (SELECT 1 FROM webhook_deliveries p WHERE p.event_id = e.id AND p.status NOT IN (${terminal}))
      ORDER BY e.created_at
      LIMIT ${limit} FOR UPDATE SKIP LOCKED`.execute(db);
    return rows.map((r) => r.id);
  }

  /** Old legacy attempts of finished deliveries, then attempts of the deliveries of events that go. */
  async function sweepAttempts(legacy: LegacyTables, cutoffs: RetentionCutoffs, events: string[], limit: number): Promise<number> {
    const aged = legacy.attempts
      ? await deleteCount(sql`
      WITH picked AS MATERIALIZED (
        SELECT a.id FROM ${sql.table(legacy.attempts)} a JOIN webhook_deliveries d ON d.id = a.delivery_id
        WHERE a.created_at < ${cutoffs.attemptsBefore}::timestamptz AND d.status IN (${terminal})
        ORDER BY a.created_at
        LIMIT ${limit} FOR UPDATE OF a SKIP LOCKED
      )
      DELETE FROM ${sql.table(legacy.attempts)} WHERE id IN (SELECT id FROM picked)`)
      : 0;
    if (aged >= limit || events.length === 0) return aged;
    // Needed when events are kept for less time than attempts: the event's attempts block its deletion.
    const ofExpiredEvents = await deleteCount(sql`
      WITH picked AS MATERIALIZED (
        SELECT a.id FROM webhook_deliveries d JOIN webhook_attempts a ON a.delivery_id = d.id
        WHERE d.event_id = ANY(${events}::uuid[])
        LIMIT ${limit - aged} FOR UPDATE OF a SKIP LOCKED
      )
      DELETE FROM webhook_attempts WHERE id IN (SELECT id FROM picked)`);
    return aged + ofExpiredEvents;
  }

  return {
    async sweep(legacy: LegacyTables, cutoffs: RetentionCutoffs, limit: number): Promise<RetentionResult> {
      const expired = legacy.events ? await expiredEvents(legacy.events, cutoffs.eventsBefore, limit) : [];
      const attempts = await sweepAttempts(legacy, cutoffs, expired, limit);
      if (expired.length === 0 || !legacy.events) return { attempts, deliveries: 0, events: 0 };
      // A delivery with attempts left (the next pass takes them) stays, and so does its event.
      const deliveries = await deleteCount(sql`
        WITH picked AS MATERIALIZED (
          SELECT d.id FROM webhook_deliveries d
          WHERE d.event_id = ANY(${expired}::uuid[]) AND d.status IN (${terminal})
            AND NOT EXISTS (SELECT 1 FROM webhook_attempts a WHERE a.delivery_id = d.id)
          LIMIT ${limit} FOR UPDATE OF d SKIP LOCKED
        )
        DELETE FROM webhook_deliveries WHERE id IN (SELECT id FROM picked)`);
      // Pushes went with their event by a cascading key before the tables were partitioned; now they go here.
      await deleteCount(sql`DELETE FROM push_deliveries WHERE event_id = ANY(${expired}::uuid[])`);
      // Only events no delivery points to any more: a pending delivery always keeps its event.
      const events = await deleteCount(sql`
        DELETE FROM ${sql.table(legacy.events)} e
        WHERE e.id = ANY(${expired}::uuid[]) AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.event_id = e.id)`);
      return { attempts, deliveries, events };
    },
  };
}

export type RetentionRepository = ReturnType<typeof createRetentionRepository>;
