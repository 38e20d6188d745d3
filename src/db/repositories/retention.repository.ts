import { sql, type RawBuilder } from 'kysely';
import type { Db } from '../database.js';
import type { DeliveryStatus } from '../db.types.js';

/** Deliveries nothing will send again; anything else (pending, or a state added later) is kept. */
const TERMINAL: readonly DeliveryStatus[] = ['delivered', 'failed', 'canceled'];

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
 * Bounded deletes for the tables that only grow. Each statement deletes at most `limit` rows,
 * picked with FOR UPDATE SKIP LOCKED, so instances sweeping at once share the work instead of
 * queueing behind each other, and a pass never holds many locks or a long transaction.
 */
export function createRetentionRepository(db: Db) {
  const terminal = sql.join(TERMINAL.map((s) => sql`${s}`));

  /** The event's deliveries are all finished (or it has none): it may go once it is old enough. */
  const settled = (eventId: RawBuilder<unknown>) => sql`NOT EXISTS (
      SELECT 1 FROM webhook_deliveries p WHERE p.event_id = ${eventId} AND p.status NOT IN (${terminal})
    )`;

  async function deleteCount(query: RawBuilder<unknown>): Promise<number> {
    const res = await query.execute(db);
    return Number(res.numAffectedRows ?? 0);
  }

  /** Old attempts of finished deliveries, then every attempt of a delivery whose event goes. */
  async function sweepAttempts(cutoffs: RetentionCutoffs, limit: number): Promise<number> {
    const aged = await deleteCount(sql`
      DELETE FROM webhook_attempts WHERE id IN (
        SELECT a.id FROM webhook_attempts a JOIN webhook_deliveries d ON d.id = a.delivery_id
        WHERE a.created_at < ${cutoffs.attemptsBefore}::timestamptz AND d.status IN (${terminal})
        LIMIT ${limit} FOR UPDATE OF a SKIP LOCKED
      )`);
    if (aged >= limit) return aged;
    // Needed when events are kept for less time than attempts: the event's attempts block its deletion.
    const ofExpiredEvents = await deleteCount(sql`
      DELETE FROM webhook_attempts WHERE id IN (
        SELECT a.id FROM events e
        JOIN webhook_deliveries d ON d.event_id = e.id
        JOIN webhook_attempts a ON a.delivery_id = d.id
        WHERE e.created_at < ${cutoffs.eventsBefore}::timestamptz AND d.status IN (${terminal}) AND ${settled(sql.ref('e.id'))}
        LIMIT ${limit - aged} FOR UPDATE OF a SKIP LOCKED
      )`);
    return aged + ofExpiredEvents;
  }

  return {
    async sweep(cutoffs: RetentionCutoffs, limit: number): Promise<RetentionResult> {
      const attempts = await sweepAttempts(cutoffs, limit);
      // A delivery with attempts left (the next pass takes them) stays, so the foreign key holds.
      const deliveries = await deleteCount(sql`
        DELETE FROM webhook_deliveries WHERE id IN (
          SELECT d.id FROM events e JOIN webhook_deliveries d ON d.event_id = e.id
          WHERE e.created_at < ${cutoffs.eventsBefore}::timestamptz AND d.status IN (${terminal}) AND ${settled(sql.ref('e.id'))}
            AND NOT EXISTS (SELECT 1 FROM webhook_attempts a WHERE a.delivery_id = d.id)
          LIMIT ${limit} FOR UPDATE OF d SKIP LOCKED
        )`);
      // Only events no delivery points to any more: a pending delivery always keeps its event.
      const events = await deleteCount(sql`
        DELETE FROM events WHERE id IN (
          SELECT e.id FROM events e
          WHERE e.created_at < ${cutoffs.eventsBefore}::timestamptz
            AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.event_id = e.id)
          LIMIT ${limit} FOR UPDATE SKIP LOCKED
        )`);
      return { attempts, deliveries, events };
    },
  };
}

export type RetentionRepository = ReturnType<typeof createRetentionRepository>;
