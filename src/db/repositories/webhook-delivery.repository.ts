import { sql, type Kysely, type RawBuilder } from 'kysely';
import type { Database, StoredDeliveryStatus } from '../db.types.js';
import type { Db } from '../database.js';
import { ATTEMPTED_WORK, claimLeased, freeSlotsCte, type Leased, type LeasedWorkSpec } from '../leased-claim.query.js';
import { WEBHOOK_TEST_EVENT, type DeliveredEvent, type DeliveryStatus, type WebhookDisabledReason } from '../../domain/vocabulary.js';
import { asUnitOfWork, type AlsoInTransaction } from '../unit-of-work.js';
import { camelRow } from '../rows/row.mapper.js';
import { compileOnce, type SlotFn } from '../compiled-query.js';

/** A delivery this worker holds until `leaseUntil`, with everything needed to send it. */
export interface ClaimedDelivery {
  id: string;
  webhookId: string;
  partnerId: string;
  /** Number of this attempt (1 for the first), which is also the claim's lease token. */
  attempt: number;
  url: string;
  secretCiphertext: string;
  /** The secret a rotation replaced, while its grace lasts: attempts are signed with both. */
  previousSecretCiphertext: string | null;
  previousSecretExpiresAt: Date | null;
  eventId: string;
  event: DeliveredEvent;
  data: Record<string, unknown>;
  eventCreatedAt: Date;
  /**
   * The delivery's own created_at, its partition key, as the database writes it (to the
   * microsecond, where a Date keeps milliseconds): the attempt's write finds its row in one month.
   */
  createdAt: string;
  /** The payment the event is about, if any, and the trace context of the request that created it. */
  paymentId: string | null;
  traceParent: string | null;
  traceState: string | null;
}

/**
 * Where a webhook's deliveries are sent from: `slow` once an attempt failed or timed out, until
 * one succeeds, with slots of its own, so a receiver that hangs never holds a healthy one's slot.
 */
export type DeliveryLane = 'normal' | 'slow';

/** How many attempts this instance may start now in one lane: overall, per endpoint and per partner. */
export interface ClaimLimits {
  /** The lane claimed from (normal when not given). */
  lane?: DeliveryLane;
  total: number;
  perEndpoint: number;
  perPartner: number;
  /** Endpoints (webhook ids) with attempts in flight here, and how many more each may start. */
  endpointFree: ReadonlyMap<string, number>;
  /** Partners with attempts in flight here, and how many more each may start. */
  partnerFree: ReadonlyMap<string, number>;
  /**
   * The lane's slots in all, busy or free. When given, no partner may hold more than its share,
   * this divided by one more than the partners with attempts in flight or due (see partnerShare).
   */
  capacity?: number;
}

/**
 * The most slots of a lane one partner may hold while `partners` partners have attempts in flight
 * or due there. The one more keeps a share free for a partner whose work arrives next, so
 * partners whose receivers hang together never hold every slot before their attempts time out.
 */
export function partnerShare(capacity: number, partners: number): number {
  return Math.max(1, Math.floor(capacity / (partners + 1)));
}

export type AttemptOutcome =
  | { succeeded: true; statusCode: number; durationMs: number }
  | { succeeded: false; statusCode: number | null; durationMs: number; error: string; nextAttemptAt: Date | null };

/** What recording an attempt did. */
export interface FinishedAttempt {
  /** False when the claim's lease had run out and a newer claim holds the delivery: nothing was written. */
  recorded: boolean;
  /** The webhook changed lanes, so its other deliveries are now claimed by the other lane. */
  movedLane: boolean;
}

/** A delivery as the operator lists it, with its latest attempt's answer. */
export interface DeliveryLogRow {
  id: string;
  webhook_id: string;
  partner_id: string;
  url: string;
  event: string;
  event_id: string;
  status: DeliveryStatus;
  attempts: number;
  last_status_code: number | null;
  last_error: string | null;
  next_attempt_at: Date;
  delivered_at: Date | null;
  created_at: Date;
  /** Why its webhook is disabled (its pending deliveries wait); null while enabled. */
  webhook_disabled_reason: WebhookDisabledReason | null;
}

interface ClaimedRow {
  id: string;
  webhook_id: string;
  partner_id: string;
  url: string;
  secret_ciphertext: string;
  previous_secret_ciphertext: string | null;
  previous_secret_expires_at: Date | null;
  event_id: string;
  event: string;
  payload: Record<string, unknown>;
  created_at: Date;
  delivery_created_at: string;
  payment_id: string | null;
  trace_parent: string | null;
  trace_state: string | null;
}

/**
 * Pending deliveries, in one lane per webhook of the limits' lane (slow_since set or not) with
 * free slots here, each webhook's partner its turn key: a partner takes no more than its own free
 * slots, nor more than takes it to its share of the lane (partnerShare).
 */
function dueDeliveries(now: Date, limits: ClaimLimits): LeasedWorkSpec {
  const perEndpoint = sql`${limits.perEndpoint}::int`;
  const perPartner = sql`${limits.perPartner}::int`;
  const partnerFreeOf = (partner: RawBuilder<unknown>) => sql`coalesce((SELECT free FROM partner_free WHERE partner_id = ${partner}), ${perPartner})`;
  return {
    ...ATTEMPTED_WORK,
    // With the partition key, the claim's update finds each row in its month.
    key: ['id', 'created_at'],
    table: 'webhook_deliveries',
    laneColumn: 'webhook_id',
    with: [freeSlotsCte('endpoint_free', 'webhook_id', limits.endpointFree), freeSlotsCte('partner_free', 'partner_id', limits.partnerFree)],
    lanes: sql`SELECT w.id AS lane_key, coalesce(ef.free, ${perEndpoint}) AS free, w.partner_id AS turn_key
      FROM webhooks w
      LEFT JOIN endpoint_free ef ON ef.webhook_id = w.id
      WHERE w.deleted_at IS NULL AND w.disabled_at IS NULL
        AND (w.slow_since IS NOT NULL) = ${limits.lane === 'slow'}::boolean
        AND ${partnerFreeOf(sql`w.partner_id`)} > 0`,
    // A partner's share counts the partners busy here and those with deliveries due.
    turnCap: sql`least(
      ${partnerFreeOf(sql`r.turn_key`)},
      coalesce(greatest(1, ${limits.capacity ?? null}::int / (
        (SELECT count(*)::int FROM (SELECT partner_id FROM partner_free UNION SELECT turn_key FROM locked) p) + 1
      )), ${perPartner}) - (${perPartner} - ${partnerFreeOf(sql`r.turn_key`)})
    )`,
    alsoSet: sql`updated_at = ${now}::timestamptz`,
    returning: sql`t.id, t.webhook_id, t.event_id, t.created_at::text AS delivery_created_at`,
    select: sql`SELECT c.id, c.webhook_id, c.event_id, c.delivery_created_at, c.lease_token, w.partner_id, w.url, w.secret_ciphertext,
        w.previous_secret_ciphertext, w.previous_secret_expires_at, e.event, e.payload, e.created_at, e.payment_id, p.trace_parent, p.trace_state
      FROM claimed c JOIN webhooks w ON w.id = c.webhook_id JOIN events e ON e.id = c.event_id LEFT JOIN payments p ON p.id = e.payment_id`,
  };
}

const claimedRow = camelRow([
  'id', 'webhook_id', 'partner_id', 'url', 'secret_ciphertext', 'previous_secret_ciphertext', 'previous_secret_expires_at', 'event_id', 'payment_id', 'trace_parent', 'trace_state',
]);

function toClaimed(row: Leased<ClaimedRow>): ClaimedDelivery {
  return { ...claimedRow(row), attempt: row.lease_token, event: row.event as DeliveredEvent, data: row.payload, eventCreatedAt: row.created_at, createdAt: row.delivery_created_at };
}

/**
 * A pending delivery (alias `d`) that waits, past `at`, for a first attempt or for a retry its
 * last attempt scheduled: never attempted, or its last attempt (the one its count names) is
 * logged. A claimed one has no such attempt yet, since the claim counted it before sending: it is
 * in flight, its due time the lease's end, and is never made due again under its sender.
 */
export function waitingPast(d: string, at: Date): RawBuilder<boolean> {
  const ref = (column: string) => sql.ref(`${d}.${column}`);
  return sql<boolean>`(${ref('status')} = 'pending' AND ${ref('next_attempt_at')} > ${at}::timestamptz AND (${ref('attempts')} = 0 OR EXISTS (
    SELECT 1 FROM webhook_attempts wa WHERE wa.delivery_id = ${ref('id')} AND wa.attempt = ${ref('attempts')}
  )))`;
}

/** The stored status in the words of both APIs (StoredDeliveryStatus says why they differ). */
const shownStatus = sql<DeliveryStatus>`CASE d.status WHEN 'delivered' THEN 'succeeded' ELSE d.status END`.as('status');
const storedStatus = (status: DeliveryStatus): StoredDeliveryStatus => (status === 'succeeded' ? 'delivered' : status);

/**
 * How long before its delivery's creation an attempt's time may read: the attempt is stamped by
 * the service's clock, the delivery by the database's, and a service clock behind the database's
 * must not hide an attempt. A bound, so that the attempts' lookup reads the months from the
 * delivery's on, not every month kept.
 */
const ATTEMPT_CLOCK_SLACK = sql.lit('1 day');

/**
 * The event of delivery `d`, looked up by its partition key as well (a delivery carries its
 * event's created_at): one month's key instead of every month's. The LIMIT keeps it a lookup per
 * delivery: as a join, the planner takes the two equal columns for independent ones, expects one
 * row of the whole join, and hashes every month instead.
 */
export const eventOf = (d: RawBuilder<unknown>) =>
  sql`SELECT ev.id, ev.event, ev.payment_id FROM events ev WHERE ev.id = ${d}.event_id AND ev.created_at = ${d}.created_at LIMIT 1`;

/** Deliveries as the operator lists them, each with its latest attempt's answer and its event (eventOf). */
const logRows = (executor: Kysely<Database>) =>
  executor
    .selectFrom('webhook_deliveries as d')
    .innerJoin('webhooks as w', 'w.id', 'd.webhook_id')
    .innerJoinLateral(sql<{ event: string }>`(${eventOf(sql`d`)})`.as('e'), (join) => join.onTrue())
    .leftJoinLateral(
      (eb) =>
        eb
          .selectFrom('webhook_attempts as a')
          .select(['a.status_code', 'a.error'])
          .whereRef('a.delivery_id', '=', 'd.id')
          .where(sql<boolean>`a.created_at >= d.created_at - ${ATTEMPT_CLOCK_SLACK}::interval`)
          .orderBy('a.attempt', 'desc')
          .limit(1)
          .as('last'),
      (join) => join.onTrue(),
    )
    .select([
      'd.id', 'd.webhook_id', 'w.partner_id', 'w.url', 'e.event', 'd.event_id', shownStatus, 'd.attempts',
      'last.status_code as last_status_code', 'last.error as last_error', 'd.next_attempt_at', 'd.delivered_at', 'd.created_at',
      'w.disabled_reason as webhook_disabled_reason',
    ]);

/** What an attempt did to its delivery: delivered, scheduled for a retry, or failed for good. */
type FinishShape = 'delivered' | 'retry' | 'failed';
type FinishSlot = 'deliveryId' | 'createdAt' | 'webhookId' | 'attempt' | 'statusCode' | 'durationMs' | 'error' | 'nextAttemptAt' | 'at';

/**
 * The statement that logs an attempt and moves its delivery on, for one shape of outcome: one
 * statement, so one round trip, for the log row and the delivery's new state together.
 */
function finishStatement(db: Db, shape: FinishShape, slot: SlotFn<FinishSlot>) {
  const succeeded = shape === 'delivered';
  const at = slot<Date>('at');
  const next =
    shape === 'delivered' ? { status: 'delivered' as const, delivered_at: at } : shape === 'retry' ? { next_attempt_at: slot<Date>('nextAttemptAt') } : { status: 'failed' as const };
  return db
    .with('logged', (q) =>
      q
        .insertInto('webhook_attempts')
        .values({
          delivery_id: slot<string>('deliveryId'),
          delivery_created_at: sql<Date>`${slot<string>('createdAt')}::timestamptz`,
          webhook_id: slot<string>('webhookId'),
          attempt: slot<number>('attempt'),
          succeeded,
          status_code: slot<number | null>('statusCode'),
          duration_ms: slot<number>('durationMs'),
          error: slot<string | null>('error'),
          next_retry_at: shape === 'retry' ? slot<Date>('nextAttemptAt') : null,
          created_at: at,
        })
        .returning('delivery_id'),
    )
    .with('moved', (q) =>
      q
        .updateTable('webhook_deliveries')
        .set({ ...next, updated_at: at })
        .where('id', '=', slot<string>('deliveryId'))
        .where(sql<boolean>`created_at = ${slot<string>('createdAt')}::timestamptz`)
        .where('status', '=', 'pending')
        .where('attempts', '=', slot<number>('attempt'))
        .returning('webhook_id'),
    )
    .with('lane', (q) =>
      q
        .updateTable('webhooks')
        .set({ slow_since: succeeded ? null : at })
        .where('id', 'in', (eb) => eb.selectFrom('moved').select('webhook_id'))
        // Written only when the lane changes, so a busy webhook's row is not rewritten by every attempt.
        .where('slow_since', succeeded ? 'is not' : 'is', null)
        .returning('id'),
    )
    .selectFrom('moved')
    .select((eb) => ['webhook_id', eb.exists(eb.selectFrom('lane').select('id')).as('moved_lane')]);
}

/** `reads`: where the operator's delivery log is listed from (the replica's routed reads, or the database itself). */
export function createWebhookDeliveryRepository(db: Db, reads: Db = db) {
  // Compiled once per shape: every delivery attempt runs one, and building and compiling the
  // three CTEs each time was the largest of Kysely's costs in a payment's life.
  const finishing = {
    delivered: compileOnce((slot: SlotFn<FinishSlot>) => finishStatement(db, 'delivered', slot)),
    retry: compileOnce((slot: SlotFn<FinishSlot>) => finishStatement(db, 'retry', slot)),
    failed: compileOnce((slot: SlotFn<FinishSlot>) => finishStatement(db, 'failed', slot)),
  };
  return {
    // Due deliveries taken by this worker, and how many wait.

    /**
     * Claims due deliveries for this worker, never more of one endpoint or partner than it has
     * free slots, so a backlog of one partner cannot crowd another out of a pass. Rows locked by
     * another claimer are skipped, and pushing next_attempt_at to the lease expiry keeps every
     * other worker off them until then (a worker that dies mid-attempt releases them by simply
     * letting the lease run out).
     *
     * Each active webhook is probed on its own (webhook_id, next_attempt_at) index for at most
     * its free slots, so the cost follows the number of webhooks, not the size of a backlog.
     * When the overall limit is short, partners take turns: every partner's first row, then
     * every partner's second, oldest first within a turn. Only webhooks of the limits' lane are
     * claimed (slow_since set or not).
     */
    async claimDue(now: Date, leaseUntil: Date, limits: ClaimLimits): Promise<ClaimedDelivery[]> {
      const rows = await claimLeased<ClaimedRow>(db, dueDeliveries(now, limits), { now, leaseUntil, batch: limits.total });
      return rows.map(toClaimed);
    },

    /**
     * The earliest due time of a pending delivery of an enabled webhook (null when none waits).
     * Probed per webhook on its (webhook_id, next_attempt_at) index, so the cost follows the
     * number of webhooks; a disabled webhook's deliveries wait on purpose and are left out.
     */
    async earliestDue(): Promise<Date | null> {
      const { rows } = await sql<{ due: Date | null }>`
        SELECT min(x.due) AS due FROM webhooks w
        CROSS JOIN LATERAL (
          SELECT d.next_attempt_at AS due FROM webhook_deliveries d
          WHERE d.webhook_id = w.id AND d.status = 'pending'
          ORDER BY d.next_attempt_at LIMIT 1
        ) x
        WHERE w.deleted_at IS NULL AND w.disabled_at IS NULL`.execute(db);
      const due = rows[0]?.due;
      return due === null || due === undefined ? null : new Date(due);
    },

    /**
     * Deliveries still pending, for the metrics: the pending deliveries' partial indexes, never the
     * delivered history. The status is their predicate's literal: a prepared statement's generic
     * plan cannot match a parameter to a partial index and would count every delivery ever made.
     */
    async countPending(): Promise<number> {
      const row = await db
        .selectFrom('webhook_deliveries')
        .select(sql<number>`count(*)::int`.as('n'))
        .where('status', '=', sql.lit('pending'))
        .executeTakeFirstOrThrow();
      return Number(row.n);
    },

    // What became of an attempt.

    /**
     * Logs the attempt, moves the delivery on and puts its webhook in the lane the outcome calls
     * for: the normal one after a success, the slow one after a failure or a timeout. Fenced by the
     * claim's lease token (its attempt number): a late answer from a worker whose lease already ran
     * out leaves the newer claim, and the lane it was sent from, alone, and records nothing.
     */
    async finish(claim: ClaimedDelivery, outcome: AttemptOutcome, at: Date): Promise<FinishedAttempt> {
      const shape: FinishShape = outcome.succeeded ? 'delivered' : outcome.nextAttemptAt ? 'retry' : 'failed';
      const { rows } = await db.executeQuery(
        finishing[shape]({
          deliveryId: claim.id,
          createdAt: claim.createdAt,
          webhookId: claim.webhookId,
          attempt: claim.attempt,
          statusCode: outcome.statusCode,
          durationMs: Math.round(outcome.durationMs),
          error: outcome.succeeded ? null : outcome.error,
          nextAttemptAt: outcome.succeeded ? null : outcome.nextAttemptAt,
          at,
        }),
      );
      const moved = rows[0];
      return { recorded: moved !== undefined, movedLane: moved?.moved_lane === true };
    },

    // The attempts and deliveries as partners and operators read them.

    /**
     * Every partner's deliveries, newest first, keyset-paged after the delivery id `after`. One
     * partner's are read webhook by webhook through the (webhook, created_at) index, each cut to
     * the page, and merged: walking every partner's newest deliveries for one partner's reads
     * past all the others'.
     */
    async listLog(filter: { partnerId?: string; status?: DeliveryStatus }, after: string | null, limit: number): Promise<DeliveryLogRow[]> {
      const status = filter.status ? sql`AND d.status = ${storedStatus(filter.status)}` : sql``;
      const before = after ? sql`AND (d.created_at, d.id) < (SELECT c.created_at, c.id FROM webhook_deliveries c WHERE c.id = ${after}::uuid)` : sql``;
      let q = logRows(reads).orderBy('d.created_at', 'desc').orderBy('d.id', 'desc').limit(limit);
      if (filter.partnerId) {
        q = q.where(sql<boolean>`(d.id, d.created_at) IN (
          SELECT page.id, page.created_at FROM webhooks pw CROSS JOIN LATERAL (
            SELECT d.id, d.created_at FROM webhook_deliveries d
            WHERE d.webhook_id = pw.id ${status} ${before}
            ORDER BY d.created_at DESC, d.id DESC LIMIT ${limit}
          ) page
          WHERE pw.partner_id = ${filter.partnerId}::uuid
          ORDER BY page.created_at DESC, page.id DESC LIMIT ${limit})`);
      } else {
        q = q.where(sql<boolean>`true ${status} ${before}`);
      }
      return q.execute();
    },

    // Deliveries queued on request: one more attempt of a delivery, or a test.

    /**
     * Queues one more attempt of a delivery, due now, whatever became of it, and `also` in the same
     * transaction; `deleted` when its webhook is deleted (there is nowhere to send it). The attempt
     * count goes on, so the attempt log keeps every try in order. With `owner`, a delivery of
     * another webhook or partner is `missing` (the partner API's redeliver).
     */
    async redeliver(
      id: string,
      at: Date,
      also: AlsoInTransaction<{ before: DeliveryLogRow; after: DeliveryLogRow }>,
      owner?: { partnerId: string; webhookId: string },
    ): Promise<DeliveryLogRow | 'missing' | 'deleted'> {
      return db.transaction().execute(async (trx) => {
        let found = logRows(trx).where('d.id', '=', id);
        if (owner) found = found.where('d.webhook_id', '=', owner.webhookId).where('w.partner_id', '=', owner.partnerId);
        const before = await found.executeTakeFirst();
        if (!before) return 'missing' as const;
        // Share-locked, so a concurrent delete of the webhook either wins first (nothing is queued)
        // or waits for this commit and then cancels the queued attempt with the rest.
        const live = await trx.selectFrom('webhooks').select('id').where('id', '=', before.webhook_id).where('deleted_at', 'is', null).forShare().executeTakeFirst();
        if (!live) return 'deleted' as const;
        await trx.updateTable('webhook_deliveries').set({ status: 'pending', next_attempt_at: at, updated_at: at }).where('id', '=', id).execute();
        const after = await logRows(trx).where('d.id', '=', id).executeTakeFirstOrThrow();
        await also(asUnitOfWork(trx), { before, after });
        return after;
      });
    },

    /**
     * Makes due at `at` at most `limit` of the webhook's deliveries waiting past it (waitingPast),
     * its receiver being back; how many. Rows another transaction holds are skipped: one claiming
     * them sends them anyway, and a concurrent call makes them due itself.
     */
    async sendWaitingNow(webhookId: string, at: Date, limit: number): Promise<number> {
      // Materialized, so the rows are picked once: a subquery the plan scanned again would pick the next ones too.
      const { rows } = await sql<{ id: string }>`
        WITH picked AS MATERIALIZED (
          SELECT d.id FROM webhook_deliveries d
          WHERE d.webhook_id = ${webhookId}::uuid AND ${waitingPast('d', at)}
          LIMIT ${limit}
          FOR UPDATE SKIP LOCKED
        )
        UPDATE webhook_deliveries w SET next_attempt_at = ${at}::timestamptz, updated_at = ${at}::timestamptz
        FROM picked WHERE w.id = picked.id
        RETURNING w.id`.execute(db);
      return rows.length;
    },

    /**
     * Writes a `webhook.test` event for the partner and one pending delivery of it, due at
     * `dueAt`, to this one webhook whatever it subscribed to; null when the webhook is not the
     * partner's or is deleted. The webhook row is share-locked, so a concurrent delete either
     * waits for this (and then cancels the delivery) or wins (and this writes nothing).
     */
    async queueTest(input: { partnerId: string; webhookId: string; data: Record<string, unknown>; dueAt: Date }): Promise<string | null> {
      const { rows } = await sql<{ id: string }>`
        WITH target AS (
          SELECT id, partner_id FROM webhooks
          WHERE id = ${input.webhookId}::uuid AND partner_id = ${input.partnerId}::uuid AND deleted_at IS NULL
          FOR SHARE
        ), ev AS (
          INSERT INTO events (partner_id, event, payload)
          SELECT partner_id, ${WEBHOOK_TEST_EVENT}, ${JSON.stringify(input.data)}::jsonb FROM target
          RETURNING id, created_at
        )
        INSERT INTO webhook_deliveries (webhook_id, event_id, status, next_attempt_at, created_at)
        SELECT target.id, ev.id, 'pending', ${input.dueAt}::timestamptz, ev.created_at FROM target CROSS JOIN ev
        RETURNING id`.execute(db);
      return rows[0]?.id ?? null;
    },
  };
}

export type WebhookDeliveryRepository = ReturnType<typeof createWebhookDeliveryRepository>;
