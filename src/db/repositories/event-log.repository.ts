import { sql } from 'kysely';
import type { Db } from '../database.js';
import { trxOf, unitOfWorkRunner, type Trx } from '../unit-of-work.js';
import { WEBHOOK_EVENTS, type WebhookEvent } from '../../domain/vocabulary.js';

/** A partner's event as the events API shows it: the payload is the webhook body's `data`. */
export interface EventRow {
  id: string;
  event: WebhookEvent;
  payload: Record<string, unknown>;
  created_at: Date;
  /** Its position in the feed. */
  sequence: number;
}

export interface EventFilter {
  type?: WebhookEvent;
  paymentId?: string;
  /** Inclusive. */
  from?: Date;
  /** Exclusive. */
  to?: Date;
}

export interface EventLogOptions {
  /** Events positioned per assigner transaction. */
  batchSize?: number;
  /** Transactions per `assignPending` call: a read never waits on an unbounded backlog. */
  maxBatches?: number;
  /**
   * Where the lists are read from: the replica's routed reads, or the database itself. Positions
   * are given on the primary and replicated in their order, so a lagging replica shows a shorter
   * feed, never one with a gap a reader could step over.
   */
  reads?: Db;
}

const toRow = (r: { id: string; event: string; payload: Record<string, unknown>; created_at: Date; sequence: string | number | bigint | null }): EventRow => ({
  id: r.id,
  event: r.event as WebhookEvent,
  payload: r.payload,
  created_at: r.created_at,
  sequence: Number(r.sequence),
});

/**
 * Gives the oldest `batchSize` unpositioned events the positions after `last`. A row retention
 * deleted meanwhile is skipped by the update; its number is simply not used. Exported for the
 * test of its plan.
 *
 * The batch is chosen once and each of its events updated by its key. The statistics of
 * `sequence IS NULL` are those of the last ANALYZE, often taken when every event had its position,
 * so the planner expects one pending event: given a second path to them (the partial index,
 * through `e.sequence IS NULL` in the update), it rescanned the whole batch for each pending event,
 * 5.8 s for a batch of 1,000 after a burst of 3,300. The lock on event_positions already keeps any
 * other assigner from positioning the batch meanwhile, so the update needs no such condition.
 */
export function positionStatement(last: string, batchSize: number) {
  return sql<{ sequence: string }>`
    WITH batch AS MATERIALIZED (
      SELECT id, row_number() OVER (ORDER BY created_at, id) AS n
      FROM (SELECT id, created_at FROM events WHERE sequence IS NULL ORDER BY created_at, id LIMIT ${batchSize}) pending
    )
    UPDATE events e SET sequence = ${last}::bigint + batch.n
    FROM batch
    WHERE e.id = batch.id
    RETURNING e.sequence::text AS sequence`;
}

/**
 * One batch, in the caller's transaction. The row lock makes a second assigner wait until this
 * one commits; READ COMMITTED then gives its next statement a snapshot that sees this one's
 * positions, so two assigners never hand out the same numbers or interleave them.
 */
async function positionBatch(trx: Trx, batchSize: number): Promise<number> {
  const { rows: locked } = await sql<{ last: string }>`SELECT last::text AS last FROM event_positions FOR UPDATE`.execute(trx);
  const last = locked[0]?.last;
  if (last === undefined) throw new Error('event_positions has no row');
  const { rows } = await positionStatement(last, batchSize).execute(trx);
  if (rows.length === 0) return 0;
  // From the numbers given, never from max(sequence): retention deletes rows, positions are never reused.
  const highest = rows.reduce((max, r) => (BigInt(r.sequence) > max ? BigInt(r.sequence) : max), BigInt(last));
  await sql`UPDATE event_positions SET last = ${highest.toString()}::bigint`.execute(trx);
  return rows.length;
}

/**
 * Reads of a partner's payment events by position (`sequence`), and the one assigner of
 * positions. Writers insert events without a position; `assignPending` gives the committed ones
 * theirs, one assigner at a time (the row lock on `event_positions`), so positions become
 * visible in increasing order and a reader that has seen position s never later sees one below
 * it. Reads return positioned events only. `webhook.test` events are the partner's own test
 * deliveries, not something that happened, so they are never listed (they are positioned all
 * the same, which leaves gaps no reader relies on).
 */
export function createEventLogRepository(db: Db, opts: EventLogOptions = {}) {
  const batchSize = opts.batchSize ?? 1000;
  const maxBatches = opts.maxBatches ?? 5;
  const inUnitOfWork = unitOfWorkRunner(db);
  const reads = opts.reads ?? db;

  const positioned = (partnerId: string) =>
    reads
      .selectFrom('events')
      .select(['id', 'event', 'payload', 'created_at', 'sequence'])
      .where('partner_id', '=', partnerId)
      .where('sequence', 'is not', null)
      .where('event', 'in', [...WEBHOOK_EVENTS]);

  type Query = ReturnType<typeof positioned>;
  const filtered = (q: Query, filter: EventFilter): Query => {
    if (filter.type) q = q.where('event', '=', filter.type);
    if (filter.paymentId) q = q.where('payment_id', '=', filter.paymentId);
    if (filter.from) q = q.where('created_at', '>=', filter.from);
    if (filter.to) q = q.where('created_at', '<', filter.to);
    return q;
  };

  return {
    /**
     * Positions every committed event that has none yet (at most `maxBatches` batches). The check
     * first takes no lock, so reads cost one index probe while nothing is pending. An event of a
     * transaction still open is invisible here and is positioned by a later call, after every
     * position handed out before its commit.
     */
    async assignPending(): Promise<void> {
      const { rows } = await sql<{ pending: boolean }>`SELECT EXISTS (SELECT 1 FROM events WHERE sequence IS NULL) AS pending`.execute(db);
      if (!rows[0]?.pending) return;
      for (let batch = 0; batch < maxBatches; batch++) {
        const assigned = await inUnitOfWork((uow) => positionBatch(trxOf(uow), batchSize));
        if (assigned < batchSize) return;
      }
    },

    /** Newest first (descending position), before position `before` when given; at most `limit` rows (the caller asks one more than a page to learn whether another follows). */
    async listNewest(partnerId: string, filter: EventFilter, before: number | null, limit: number): Promise<EventRow[]> {
      let q = filtered(positioned(partnerId), filter).orderBy('sequence', 'desc').limit(limit);
      if (before !== null) q = q.where('sequence', '<', String(before));
      return (await q.execute()).map(toRow);
    },

    /** Oldest first (ascending position), after position `after`; at most `limit` rows. */
    async listAfter(partnerId: string, filter: Pick<EventFilter, 'type' | 'paymentId'>, after: number, limit: number): Promise<EventRow[]> {
      const q = filtered(positioned(partnerId), filter).where('sequence', '>', String(after)).orderBy('sequence', 'asc').limit(limit);
      return (await q.execute()).map(toRow);
    },

    async get(partnerId: string, id: string): Promise<EventRow | undefined> {
      const row = await positioned(partnerId).where('id', '=', id).executeTakeFirst();
      return row && toRow(row);
    },
  };
}

export type EventLogRepository = ReturnType<typeof createEventLogRepository>;
