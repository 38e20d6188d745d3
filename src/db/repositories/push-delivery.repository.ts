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
     * one partner's burst of confirmations cannot hold back another's. The claim pushes
     * next_attempt_at to the lease end; the guard re-checked under the row lock makes a row
     * another instance claimed meanwhile drop out, so several instances claim disjoint rows.
     */
    async claimDue(now: Date, leaseUntil: Date, limits: { total: number; perPartner: number }): Promise<ClaimedPush[]> {
      const { rows } = await sql<{ id: string; partner_id: string; attempts: number; fcm_token: string; event: string; payload: Record<string, unknown> }>`
        WITH due AS (
          SELECT id FROM (
            SELECT id, next_attempt_at, row_number() OVER (PARTITION BY partner_id ORDER BY next_attempt_at, id) AS turn
            FROM push_deliveries WHERE status = 'pending' AND next_attempt_at <= ${now}::timestamptz
          ) ranked
          WHERE turn <= ${limits.perPartner}
          ORDER BY turn, next_attempt_at
          LIMIT ${limits.total}
        ), claimed AS (
          UPDATE push_deliveries p SET next_attempt_at = ${leaseUntil}::timestamptz, attempts = p.attempts + 1
          FROM due WHERE p.id = due.id AND p.status = 'pending' AND p.next_attempt_at <= ${now}::timestamptz
          RETURNING p.id, p.partner_id, p.attempts, p.device_id, p.event_id
        )
        SELECT c.id, c.partner_id, c.attempts, d.fcm_token, e.event, e.payload
        FROM claimed c JOIN devices d ON d.id = c.device_id JOIN events e ON e.id = c.event_id`.execute(db);
      return rows.map((r) => ({ id: r.id, partnerId: r.partner_id, attempt: r.attempts, fcmToken: r.fcm_token, event: r.event, payload: r.payload }));
    },

    /** Records the attempt; the guard on `attempts` leaves a newer claim alone. */
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
