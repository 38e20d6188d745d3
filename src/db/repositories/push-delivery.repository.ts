import { sql } from 'kysely';
import type { Db } from '../database.js';

/** A push this worker holds until its lease ends, with what the message needs. */
export interface ClaimedPush {
  id: string;
  partnerId: string;
  /** Number of this attempt (1 for the first). */
  attempt: number;
  fcmToken: string;
  event: string;
  payload: Record<string, unknown>;
}

export type PushOutcome = { delivered: true } | { delivered: false; error: string; nextAttemptAt: Date | null };

export function createPushDeliveryRepository(db: Db) {
  return {
    /**
     * Claims due pushes, at most `perPartner` of one partner and `total` in all, oldest first, so
     * one partner's burst of confirmations cannot hold back another's. Each partner's oldest due
     * rows are locked with SKIP LOCKED, so an instance never waits for rows another is claiming
     * and several instances claim disjoint rows; the claim pushes next_attempt_at to the lease end,
     * which keeps them off the rows until then.
     */
    async claimDue(now: Date, leaseUntil: Date, limits: { total: number; perPartner: number }): Promise<ClaimedPush[]> {
      if (limits.total <= 0 || limits.perPartner <= 0) return [];
      const { rows } = await sql<{ id: string; partner_id: string; attempts: number; fcm_token: string; event: string; payload: Record<string, unknown> }>`
        WITH partners AS (
          SELECT DISTINCT partner_id FROM push_deliveries WHERE status = 'pending' AND next_attempt_at <= ${now}::timestamptz
        ), locked AS (
          SELECT l.id, l.partner_id, l.next_attempt_at
          FROM partners p
          CROSS JOIN LATERAL (
            SELECT id, partner_id, next_attempt_at FROM push_deliveries
            WHERE partner_id = p.partner_id AND status = 'pending' AND next_attempt_at <= ${now}::timestamptz
            ORDER BY next_attempt_at
            LIMIT ${limits.perPartner}::int
            FOR UPDATE SKIP LOCKED
          ) l
        ), due AS (
          SELECT id FROM (
            SELECT id, next_attempt_at, row_number() OVER (PARTITION BY partner_id ORDER BY next_attempt_at, id) AS turn FROM locked
          ) ranked
          ORDER BY turn, next_attempt_at, id
          LIMIT ${limits.total}::int
        ), claimed AS (
          UPDATE push_deliveries p SET next_attempt_at = ${leaseUntil}::timestamptz, attempts = p.attempts + 1
          FROM due WHERE p.id = due.id
          RETURNING p.id, p.partner_id, p.attempts, p.device_id, p.event_id
        )
        SELECT c.id, c.partner_id, c.attempts, d.fcm_token, e.event, e.payload
        FROM claimed c JOIN devices d ON d.id = c.device_id JOIN events e ON e.id = c.event_id`.execute(db);
      return rows.map((r) => ({ id: r.id, partnerId: r.partner_id, attempt: r.attempts, fcmToken: r.fcm_token, event: r.event, payload: r.payload }));
    },

    /**
     * Records the attempt. The guard on `attempts` makes the result of a claim whose lease ran
     * out (and was claimed again) change nothing: a stale attempt never overwrites a newer one's.
     */
    async finish(claim: ClaimedPush, outcome: PushOutcome, at: Date): Promise<void> {
      const next = outcome.delivered
        ? { status: 'delivered' as const, delivered_at: at, last_error: null }
        : outcome.nextAttemptAt
          ? { next_attempt_at: outcome.nextAttemptAt, last_error: outcome.error }
          : { status: 'failed' as const, last_error: outcome.error };
      await db.updateTable('push_deliveries').set(next).where('id', '=', claim.id).where('status', '=', 'pending').where('attempts', '=', claim.attempt).execute();
    },
  };
}

export type PushDeliveryRepository = ReturnType<typeof createPushDeliveryRepository>;
