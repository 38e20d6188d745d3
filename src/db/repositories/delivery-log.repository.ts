import { sql, type RawBuilder } from 'kysely';
import type { Db } from '../database.js';
import type { DeliveredEvent, DeliveryLogStatus } from '../../domain/vocabulary.js';
import { eventOf, waitingPast } from './webhook-delivery.repository.js';

/** One entry of a webhook's delivery log: an attempt made, or the next attempt of a delivery still pending. */
export interface DeliveryLogEntry {
  item_id: string;
  at: Date;
  attempt: number;
  event: DeliveredEvent;
  event_id: string;
  payment_id: string | null;
  delivery_id: string;
  status: DeliveryLogStatus;
  status_code: number | null;
  duration_ms: number;
  error: string | null;
  next_retry_at: Date | null;
}

const entryColumns = [
  'item_id', 'at', 'attempt', 'event', 'event_id', 'payment_id', 'delivery_id', 'status', 'status_code', 'duration_ms', 'error', 'next_retry_at',
] as const satisfies readonly (keyof DeliveryLogEntry)[];

/** Where the previous page ended: the sort key of its last entry. */
export interface DeliveryLogKey {
  at: Date;
  attempt: number;
  itemId: string;
}

/** Where a recovery's previous batch ended: its last event, its time as the database's text. */
export interface RecoverCursor {
  createdAt: string;
  eventId: string;
}

/** What one batch of a recovery did: deliveries queued or made due, and events it went through. */
export interface RecoverBatch {
  queued: number;
  /** Fewer than the batch's limit: the recovery has reached the newest event. */
  events: number;
  last: RecoverCursor | null;
}

export interface DeliveryLogFilter {
  status?: DeliveryLogStatus;
  paymentId?: string;
}

/**
 * The delivery of attempt `a`, found in its own month by the delivery's created_at the attempt
 * carries; an attempt logged before attempts carried it (migration 038) by its id alone, in every
 * month. Each branch's condition on the attempt alone is checked once per attempt, before its
 * scan: only one of them reads.
 */
const deliveryOf = (a: RawBuilder<unknown>) => sql`
  (SELECT dd.event_id, dd.created_at FROM webhook_deliveries dd
   WHERE ${a}.delivery_created_at IS NOT NULL AND dd.id = ${a}.delivery_id AND dd.created_at = ${a}.delivery_created_at)
  UNION ALL
  (SELECT dd.event_id, dd.created_at FROM webhook_deliveries dd
   WHERE ${a}.delivery_created_at IS NULL AND dd.id = ${a}.delivery_id)
  LIMIT 1`;

/**
 * A webhook's delivery log and the partner's recovery of what it missed. The log merges the
 * attempts made (succeeded or failed) with one `pending` entry per delivery still to be sent (its
 * next attempt, at its due time), newest first by (time, attempt, id): each side is read through
 * its webhook index and cut to the page before they are merged.
 */
export function createDeliveryLogRepository(db: Db) {
  function attempts(webhookId: string, filter: DeliveryLogFilter, after: RawBuilder<boolean>, limit: number): RawBuilder<DeliveryLogEntry> {
    const outcome = filter.status === 'succeeded' ? sql`AND a.succeeded` : filter.status === 'failed' ? sql`AND NOT a.succeeded` : sql``;
    const payment = filter.paymentId ? sql`AND e.payment_id = ${filter.paymentId}::uuid` : sql``;
    return sql<DeliveryLogEntry>`(
      SELECT a.id AS item_id, a.created_at AS at, a.attempt, e.event, e.id AS event_id, e.payment_id, a.delivery_id,
        CASE WHEN a.succeeded THEN 'succeeded' ELSE 'failed' END AS status,
        a.status_code, a.duration_ms, a.error, a.next_retry_at
      FROM webhook_attempts a
      CROSS JOIN LATERAL (${deliveryOf(sql`a`)}) d
      CROSS JOIN LATERAL (${eventOf(sql`d`)}) e
      WHERE a.webhook_id = ${webhookId}::uuid ${outcome} ${payment}
        AND ${after}
      ORDER BY a.created_at DESC, a.attempt DESC, a.id DESC
      LIMIT ${limit}
    )`;
  }

  function pending(webhookId: string, filter: DeliveryLogFilter, after: RawBuilder<boolean>, limit: number): RawBuilder<DeliveryLogEntry> {
    const payment = filter.paymentId ? sql`AND e.payment_id = ${filter.paymentId}::uuid` : sql``;
    return sql<DeliveryLogEntry>`(
      SELECT d.id AS item_id, d.next_attempt_at AS at, d.attempts + 1 AS attempt, e.event, e.id AS event_id, e.payment_id, d.id AS delivery_id,
        'pending' AS status, NULL::int AS status_code, 0 AS duration_ms, NULL::text AS error, d.next_attempt_at AS next_retry_at
      FROM webhook_deliveries d
      CROSS JOIN LATERAL (${eventOf(sql`d`)}) e
      WHERE d.webhook_id = ${webhookId}::uuid AND d.status = 'pending' ${payment}
        AND ${after}
      ORDER BY d.next_attempt_at DESC, d.attempts DESC, d.id DESC
      LIMIT ${limit}
    )`;
  }

  return {
    async list(webhookId: string, filter: DeliveryLogFilter, after: DeliveryLogKey | null, limit: number): Promise<DeliveryLogEntry[]> {
      const before = (at: RawBuilder<unknown>, attempt: RawBuilder<unknown>, id: RawBuilder<unknown>) =>
        after ? sql<boolean>`(${at}, ${attempt}, ${id}) < (${after.at}::timestamptz, ${after.attempt}::int, ${after.itemId}::uuid)` : sql<boolean>`true`;
      const parts: RawBuilder<DeliveryLogEntry>[] = [];
      if (filter.status !== 'pending') parts.push(attempts(webhookId, filter, before(sql`a.created_at`, sql`a.attempt`, sql`a.id`), limit));
      if (!filter.status || filter.status === 'pending') parts.push(pending(webhookId, filter, before(sql`d.next_attempt_at`, sql`d.attempts + 1`, sql`d.id`), limit));
      const { rows } = await sql<DeliveryLogEntry>`
        SELECT ${sql.join(entryColumns.map((column) => sql.ref(column)))} FROM (${sql.join(parts, sql` UNION ALL `)}) log
        ORDER BY at DESC, attempt DESC, item_id DESC
        LIMIT ${limit}`.execute(db);
      return rows;
    },

    // The partner's recovery of what a webhook missed, a batch per statement.

    /**
     * One batch of a recovery: the webhook's next `limit` events of its types since `since`, after
     * `after`, oldest first, each sent once more, due at `at`, unless delivered or already on its
     * way. An event with no delivery to the webhook (it happened while the webhook was disabled,
     * or before it was registered) gets a new one; a failed or canceled delivery is queued again
     * and one waiting for a retry (waitingPast) is made due at `at`, their attempt counts going
     * on. One statement touching at most `limit` deliveries; the unique (webhook, event) key (with
     * the event's created_at, which every delivery of it carries, as the partitions need) makes a repeated or concurrent batch queue nothing twice, and `queued` counts only the
     * deliveries this one queued or made due. The webhook row is share-locked, so a concurrent
     * delete either waits (and then cancels these) or wins (and nothing is queued). Null when the
     * webhook is not the partner's (or deleted).
     */
    async recoverBatch(partnerId: string, webhookId: string, since: Date, at: Date, after: RecoverCursor | null, limit: number): Promise<RecoverBatch | null> {
      const rest = after ? sql`(e.created_at, e.id) > (${after.createdAt}::timestamptz, ${after.eventId}::uuid)` : sql`true`;
      const { rows } = await sql<{ queued: number; events: number; last_at: string | null; last_id: string | null }>`
        WITH target AS (
          SELECT id, partner_id, events FROM webhooks
          WHERE id = ${webhookId}::uuid AND partner_id = ${partnerId}::uuid AND deleted_at IS NULL
          FOR SHARE
        ), batch AS MATERIALIZED (
          SELECT e.id, e.created_at
          FROM target t JOIN events e ON e.partner_id = t.partner_id AND t.events @> jsonb_build_array(e.event)
          WHERE e.created_at >= ${since}::timestamptz AND ${rest}
          ORDER BY e.created_at, e.id
          LIMIT ${limit}
        ), queued AS (
          INSERT INTO webhook_deliveries (webhook_id, event_id, status, next_attempt_at, created_at)
          SELECT t.id, b.id, 'pending', ${at}::timestamptz, b.created_at FROM target t CROSS JOIN batch b
          ON CONFLICT (webhook_id, event_id, created_at) DO UPDATE
            SET status = 'pending', next_attempt_at = EXCLUDED.next_attempt_at, updated_at = EXCLUDED.next_attempt_at
            WHERE webhook_deliveries.status IN ('failed', 'canceled') OR ${waitingPast('webhook_deliveries', at)}
          RETURNING id
        ), last AS (
          -- As the database writes it: exact to the microsecond, where a JavaScript Date keeps milliseconds.
          SELECT created_at::text AS last_at, id AS last_id FROM batch ORDER BY created_at DESC, id DESC LIMIT 1
        )
        SELECT (SELECT count(*)::int FROM queued) AS queued, (SELECT count(*)::int FROM batch) AS events,
          (SELECT last_at FROM last) AS last_at, (SELECT last_id FROM last) AS last_id
        FROM target`.execute(db);
      const row = rows[0];
      if (!row) return null;
      const last = row.last_at && row.last_id ? { createdAt: row.last_at, eventId: row.last_id } : null;
      return { queued: Number(row.queued), events: Number(row.events), last };
    },
  };
}

export type DeliveryLogRepository = ReturnType<typeof createDeliveryLogRepository>;
