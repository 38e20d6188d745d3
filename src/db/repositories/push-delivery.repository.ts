import { sql } from 'kysely';
import type { Db } from '../database.js';
import { PUSH_STATUSES, type PushStatus } from '../../domain/vocabulary.js';
import { ATTEMPTED_WORK, claimLeased, freeSlotsCte, type LeasedWorkSpec } from '../leased-claim.query.js';

/** A push this worker holds until its lease ends, with what the message needs. */
export interface ClaimedPush {
  id: string;
  partnerId: string;
  /** Number of this attempt (1 for the first), which is also the claim's lease token. */
  attempt: number;
  fcmToken: string;
  event: string;
  payload: Record<string, unknown>;
  /** The payment the event is about, if any, and the trace context of the request that created it. */
  paymentId: string | null;
  traceParent: string | null;
  traceState: string | null;
}

/** Sent; not sent because no FCM credentials are configured (`skipped`); or failed, retried when `nextAttemptAt` is set. */
export type PushOutcome = { delivered: true } | { skipped: true } | { delivered: false; error: string; nextAttemptAt: Date | null };

/** How many pushes this instance may start now: overall and per partner. */
export interface PushClaimLimits {
  total: number;
  perPartner: number;
  /** Partners with pushes in flight here, and how many more each may start. */
  partnerFree?: ReadonlyMap<string, number>;
}

/** Pending pushes, in one lane per partner with due pushes and free slots. */
const duePushes = (now: Date, limits: PushClaimLimits): LeasedWorkSpec => ({
  ...ATTEMPTED_WORK,
  table: 'push_deliveries',
  laneColumn: 'partner_id',
  with: [freeSlotsCte('partner_free', 'partner_id', limits.partnerFree ?? new Map())],
  lanes: sql`SELECT p.partner_id AS lane_key, coalesce(pf.free, ${limits.perPartner}::int) AS free, p.partner_id AS turn_key
    FROM (SELECT DISTINCT partner_id FROM push_deliveries WHERE status = 'pending' AND next_attempt_at <= ${now}::timestamptz) p
    LEFT JOIN partner_free pf ON pf.partner_id = p.partner_id`,
  returning: sql`t.id, t.partner_id, t.device_id, t.event_id`,
  select: sql`SELECT c.id, c.partner_id, c.lease_token, d.fcm_token, e.event, e.payload, e.payment_id, p.trace_parent, p.trace_state
    FROM claimed c JOIN devices d ON d.id = c.device_id JOIN events e ON e.id = c.event_id LEFT JOIN payments p ON p.id = e.payment_id`,
});

export function createPushDeliveryRepository(db: Db) {
  return {
    /** Pushes by status, of one partner or all; a status with none counts 0. */
    async countByStatus(partnerId?: string): Promise<Record<PushStatus, number>> {
      let query = db.selectFrom('push_deliveries').select(['status', sql<number>`count(*)::int`.as('n')]).groupBy('status');
      if (partnerId !== undefined) query = query.where('partner_id', '=', partnerId);
      const rows = await query.execute();
      return Object.fromEntries(PUSH_STATUSES.map((s) => [s, rows.find((r) => r.status === s)?.n ?? 0])) as Record<PushStatus, number>;
    },

    /**
     * Claims due pushes, at most `perPartner` of one partner and `total` in all, partners taking
     * turns, so one partner's burst of confirmations cannot hold back another's.
     */
    async claimDue(now: Date, leaseUntil: Date, limits: PushClaimLimits): Promise<ClaimedPush[]> {
      type Row = { id: string; partner_id: string; fcm_token: string; event: string; payload: Record<string, unknown> } & Record<'payment_id' | 'trace_parent' | 'trace_state', string | null>;
      const rows = await claimLeased<Row>(db, duePushes(now, limits), {
        now,
        leaseUntil,
        batch: limits.total,
      });
      return rows.map((r) => ({
        id: r.id,
        partnerId: r.partner_id,
        attempt: r.lease_token,
        fcmToken: r.fcm_token,
        event: r.event,
        payload: r.payload,
        paymentId: r.payment_id,
        traceParent: r.trace_parent,
        traceState: r.trace_state,
      }));
    },

    /**
     * Records the attempt, fenced by the claim's lease token (its attempt number): the result of a
     * claim whose lease ran out (and was claimed again) changes nothing and is false, so a stale
     * attempt never overwrites a newer one's.
     */
    async finish(claim: ClaimedPush, outcome: PushOutcome, at: Date): Promise<boolean> {
      const next =
        'skipped' in outcome
          ? { status: 'skipped' as const, last_error: null }
          : outcome.delivered
            ? { status: 'delivered' as const, delivered_at: at, last_error: null }
            : outcome.nextAttemptAt
              ? { next_attempt_at: outcome.nextAttemptAt, last_error: outcome.error }
              : { status: 'failed' as const, last_error: outcome.error };
      const row = await db
        .updateTable('push_deliveries')
        .set(next)
        .where('id', '=', claim.id)
        .where('status', '=', 'pending')
        .where('attempts', '=', claim.attempt)
        .returning('id')
        .executeTakeFirst();
      return row !== undefined;
    },
  };
}

export type PushDeliveryRepository = ReturnType<typeof createPushDeliveryRepository>;
