import { sql } from 'kysely';
import type { Db } from '../database.js';
import type { WebhookEvent } from '../../domain/webhook-message.js';

/** A delivery this worker holds until `leaseUntil`, with everything needed to send it. */
export interface ClaimedDelivery {
  id: string;
  webhookId: string;
  /** Number of this attempt (1 for the first). */
  attempt: number;
  url: string;
  secretCiphertext: string;
  event: WebhookEvent;
  data: Record<string, unknown>;
  eventCreatedAt: Date;
}

export type AttemptOutcome =
  | { succeeded: true; statusCode: number; durationMs: number }
  | { succeeded: false; statusCode: number | null; durationMs: number; error: string; nextAttemptAt: Date | null };

export interface AttemptLogRow {
  event: WebhookEvent;
  delivery_id: string;
  succeeded: boolean;
  status_code: number | null;
  duration_ms: number;
  error: string | null;
  attempt: number;
  next_retry_at: Date | null;
  created_at: Date;
}

export function createWebhookDeliveryRepository(db: Db) {
  return {
    /**
     * Claims due deliveries for this worker: rows locked by another claimer are skipped, and
     * pushing next_attempt_at to the lease expiry keeps every other worker off them until then
     * (a worker that dies mid-attempt releases them by simply letting the lease run out).
     */
    async claimDue(now: Date, leaseUntil: Date, limit: number): Promise<ClaimedDelivery[]> {
      const claimed = await db.transaction().execute(async (trx) => {
        const due = await trx
          .selectFrom('webhook_deliveries')
          .select('id')
          .where('status', '=', 'pending')
          .where('next_attempt_at', '<=', now)
          .orderBy('next_attempt_at')
          .limit(limit)
          .forUpdate()
          .skipLocked()
          .execute();
        if (due.length === 0) return [];
        return trx
          .updateTable('webhook_deliveries')
          .set({ next_attempt_at: leaseUntil, attempts: sql`attempts + 1`, updated_at: now })
          .where('id', 'in', due.map((d) => d.id))
          .returning(['id', 'attempts'])
          .execute();
      });
      if (claimed.length === 0) return [];
      const rows = await db
        .selectFrom('webhook_deliveries as d')
        .innerJoin('webhooks as w', 'w.id', 'd.webhook_id')
        .innerJoin('events as e', 'e.id', 'd.event_id')
        .select(['d.id', 'd.webhook_id', 'w.url', 'w.secret_ciphertext', 'e.event', 'e.payload', 'e.created_at'])
        .where('d.id', 'in', claimed.map((c) => c.id))
        .execute();
      const attempts = new Map(claimed.map((c) => [c.id, c.attempts]));
      return rows.map((r) => ({
        id: r.id,
        webhookId: r.webhook_id,
        attempt: attempts.get(r.id) ?? 1,
        url: r.url,
        secretCiphertext: r.secret_ciphertext,
        event: r.event as WebhookEvent,
        data: r.payload,
        eventCreatedAt: r.created_at,
      }));
    },

    /**
     * Logs the attempt and moves the delivery on. The guard on `attempts` makes a late answer
     * from a worker whose lease already ran out leave the newer claim alone.
     */
    async finish(claim: ClaimedDelivery, outcome: AttemptOutcome, at: Date): Promise<void> {
      await db.transaction().execute(async (trx) => {
        await trx
          .insertInto('webhook_attempts')
          .values({
            delivery_id: claim.id,
            webhook_id: claim.webhookId,
            attempt: claim.attempt,
            succeeded: outcome.succeeded,
            status_code: outcome.statusCode,
            duration_ms: Math.round(outcome.durationMs),
            error: outcome.succeeded ? null : outcome.error,
            next_retry_at: outcome.succeeded ? null : outcome.nextAttemptAt,
            created_at: at,
          })
          .execute();
        const next = outcome.succeeded
          ? { status: 'delivered' as const, delivered_at: at }
          : outcome.nextAttemptAt
            ? { next_attempt_at: outcome.nextAttemptAt }
            : { status: 'failed' as const };
        await trx
          .updateTable('webhook_deliveries')
          .set({ ...next, updated_at: at })
          .where('id', '=', claim.id)
          .where('status', '=', 'pending')
          .where('attempts', '=', claim.attempt)
          .execute();
      });
    },

    /** Newest attempts first across all deliveries of one webhook. */
    async listAttempts(webhookId: string, limit: number): Promise<AttemptLogRow[]> {
      const rows = await db
        .selectFrom('webhook_attempts as a')
        .innerJoin('webhook_deliveries as d', 'd.id', 'a.delivery_id')
        .innerJoin('events as e', 'e.id', 'd.event_id')
        .select(['e.event', 'a.delivery_id', 'a.succeeded', 'a.status_code', 'a.duration_ms', 'a.error', 'a.attempt', 'a.next_retry_at', 'a.created_at'])
        .where('a.webhook_id', '=', webhookId)
        .orderBy('a.created_at', 'desc')
        .orderBy('a.attempt', 'desc')
        .limit(limit)
        .execute();
      return rows.map((r) => ({ ...r, event: r.event as WebhookEvent }));
    },

    async countPending(): Promise<number> {
      const row = await db
        .selectFrom('webhook_deliveries')
        .select(sql<number>`count(*)::int`.as('n'))
        .where('status', '=', 'pending')
        .executeTakeFirstOrThrow();
      return Number(row.n);
    },
  };
}

export type WebhookDeliveryRepository = ReturnType<typeof createWebhookDeliveryRepository>;
