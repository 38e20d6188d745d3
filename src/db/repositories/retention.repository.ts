import { sql, type RawBuilder } from 'kysely';
import type { Db } from '../database.js';
import type { StoredDeliveryStatus } from '../db.types.js';

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
 * Bounded deletes for the tables that only grow. Every stage walks its table from the oldest row
 * by the created_at index and stops after `limit` rows, so a pass costs the same whatever the
 * history holds; rows are picked with FOR UPDATE SKIP LOCKED, so instances sweeping at once share
 * the work instead of queueing behind each other, and a pass never holds many locks.
 */
export function createRetentionRepository(db: Db) {
  // Literals, not parameters: the planner matches them to the partial index of migration 008.
  const terminal = sql.raw(TERMINAL.map((s) => `'${s}'`).join(', '));

  async function deleteCount(query: RawBuilder<unknown>): Promise<number> {
    const res = await query.execute(db);
    return Number(res.numAffectedRows ?? 0);
  }

  /** The oldest events past retention whose deliveries are all finished: the ones that may go. */
  async function expiredEvents(before: Date, limit: number): Promise<string[]> {
    const { rows } = await sql<{ id: string }>`
      SELECT e.id FROM events e
      WHERE e.created_at < ${before}::timestamptz
        AND NOT EXISTS (SELECT 1 FROM webhook_deliveries p WHERE p.event_id = e.id AND p.status NOT IN (${terminal}))
      ORDER BY e.created_at
      LIMIT ${limit} FOR UPDATE SKIP LOCKED`.execute(db);
    return rows.map((r) => r.id);
  }

  /** Old attempts of finished deliveries, then attempts of the deliveries of events that go. */
  async function sweepAttempts(cutoffs: RetentionCutoffs, events: string[], limit: number): Promise<number> {
    const aged = await deleteCount(sql`
      DELETE FROM webhook_attempts WHERE id IN (
        SELECT a.id FROM webhook_attempts a JOIN webhook_deliveries d ON d.id = a.delivery_id
        WHERE a.created_at < ${cutoffs.attemptsBefore}::timestamptz AND d.status IN (${terminal})
        ORDER BY a.created_at
        LIMIT ${limit} FOR UPDATE OF a SKIP LOCKED
      )`);
    if (aged >= limit || events.length === 0) return aged;
    // Needed when events are kept for less time than attempts: the event's attempts block its deletion.
    const ofExpiredEvents = await deleteCount(sql`
      DELETE FROM webhook_attempts WHERE id IN (
        SELECT a.id FROM webhook_deliveries d JOIN webhook_attempts a ON a.delivery_id = d.id
        WHERE d.event_id = ANY(${events}::uuid[])
        LIMIT ${limit - aged} FOR UPDATE OF a SKIP LOCKED
      )`);
    return aged + ofExpiredEvents;
  }

  return {
    async sweep(cutoffs: RetentionCutoffs, limit: number): Promise<RetentionResult> {
      const expired = await expiredEvents(cutoffs.eventsBefore, limit);
      const attempts = await sweepAttempts(cutoffs, expired, limit);
      if (expired.length === 0) return { attempts, deliveries: 0, events: 0 };
      // A delivery with attempts left (the next pass takes them) stays, so the foreign key holds.
      const deliveries = await deleteCount(sql`
        DELETE FROM webhook_deliveries WHERE id IN (
          SELECT d.id FROM webhook_deliveries d
          WHERE d.event_id = ANY(${expired}::uuid[]) AND d.status IN (${terminal})
            AND NOT EXISTS (SELECT 1 FROM webhook_attempts a WHERE a.delivery_id = d.id)
          LIMIT ${limit} FOR UPDATE OF d SKIP LOCKED
        )`);
      // Only events no delivery points to any more: a pending delivery always keeps its event.
      const events = await deleteCount(sql`
        DELETE FROM events e
        WHERE e.id = ANY(${expired}::uuid[]) AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.event_id = e.id)`);
      return { attempts, deliveries, events };
    },
  };
}

export type RetentionRepository = ReturnType<typeof createRetentionRepository>;
