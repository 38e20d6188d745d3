import { sql } from 'kysely';
import type { Db } from '../database.js';

/** How the first request with a key ended: the answer a replay repeats. */
export type StoredOutcome = 'created' | 'rejected';

export type IdempotencyClaim =
  | { kind: 'claimed'; paymentId: string | null }
  | { kind: 'replay'; outcome: StoredOutcome; body: unknown }
  | { kind: 'mismatch' }
  | { kind: 'in_flight' };

/** The column keeps the status the partner was answered with, as rows written before it did. */
const STATUS_OF_OUTCOME: Record<StoredOutcome, number> = { created: 201, rejected: 422 };
const outcomeOfStatus = (status: number | null): StoredOutcome => (status === STATUS_OF_OUTCOME.rejected ? 'rejected' : 'created');

interface ClaimInput {
  partnerId: string;
  key: string;
  requestHash: string;
  now: Date;
  lockUntil: Date;
  expiresAt: Date;
}

/**
 * Inserts the key, or takes over a row whose expiry has passed as if it were absent (the old
 * payment stays; only the key is reused). One statement, so of concurrent claimers of an expired
 * key the row lock lets one replace it, and the others then see the fresh row and lose.
 */
async function insertOrReplaceExpired(db: Db, input: ClaimInput): Promise<boolean> {
  const { rows } = await sql<{ key: string }>`
    INSERT INTO idempotency_keys (partner_id, key, request_hash, state, locked_until, expires_at)
    VALUES (${input.partnerId}::uuid, ${input.key}, ${input.requestHash}, 'in_progress', ${input.lockUntil}::timestamptz, ${input.expiresAt}::timestamptz)
    ON CONFLICT (partner_id, key) DO UPDATE SET
      request_hash = EXCLUDED.request_hash,
      state = EXCLUDED.state,
      locked_until = EXCLUDED.locked_until,
      expires_at = EXCLUDED.expires_at,
      payment_id = NULL,
      response_status = NULL,
      response_body = NULL,
      created_at = now()
    WHERE idempotency_keys.expires_at <= ${input.now}::timestamptz
    RETURNING key`.execute(db);
  return rows.length > 0;
}

/** Claims the key for one request, or says why not: a replay, another request's key, or one in flight. */
async function claimKey(db: Db, input: ClaimInput): Promise<IdempotencyClaim> {
  // The row can vanish between the upsert and the read (a sweep or a release); then claim afresh.
  for (let attempt = 1; ; attempt++) {
    if (await insertOrReplaceExpired(db, input)) return { kind: 'claimed', paymentId: null };

    const existing = await db
      .selectFrom('idempotency_keys')
      .select(['request_hash', 'state', 'response_status', 'response_body'])
      .where('partner_id', '=', input.partnerId)
      .where('key', '=', input.key)
      .executeTakeFirst();
    if (!existing) {
      if (attempt < 3) continue;
      return { kind: 'in_flight' };
    }
    if (existing.request_hash !== input.requestHash) return { kind: 'mismatch' };
    if (existing.state === 'completed') return { kind: 'replay', outcome: outcomeOfStatus(existing.response_status), body: existing.response_body };
    // A released or abandoned claim (crash, upstream failure) is taken over atomically by one caller.
    const taken = await db
      .updateTable('idempotency_keys')
      .set({ locked_until: input.lockUntil })
      .where('partner_id', '=', input.partnerId)
      .where('key', '=', input.key)
      .where('state', '=', 'in_progress')
      .where('locked_until', '<=', input.now)
      .where('expires_at', '>', input.now)
      .returning('payment_id')
      .executeTakeFirst();
    return taken ? { kind: 'claimed', paymentId: taken.payment_id } : { kind: 'in_flight' };
  }
}

/**
 * Idempotency keys live in the database, so concurrent duplicates across instances are decided
 * by the primary key on (partner_id, key), not by process memory.
 */
export function createIdempotencyRepository(db: Db) {
  return {
    claim: (input: ClaimInput): Promise<IdempotencyClaim> => claimKey(db, input),

    async complete(partnerId: string, key: string, outcome: StoredOutcome, body: unknown): Promise<void> {
      await db
        .updateTable('idempotency_keys')
        .set({ state: 'completed', response_status: STATUS_OF_OUTCOME[outcome], response_body: JSON.stringify(body) })
        .where('partner_id', '=', partnerId)
        .where('key', '=', key)
        .execute();
    },

    /** Gives the key back: forgotten when no payment was made, unlocked for a retry otherwise. */
    async release(partnerId: string, key: string, now: Date): Promise<void> {
      await db.deleteFrom('idempotency_keys').where('partner_id', '=', partnerId).where('key', '=', key).where('payment_id', 'is', null).execute();
      await db
        .updateTable('idempotency_keys')
        .set({ locked_until: now })
        .where('partner_id', '=', partnerId)
        .where('key', '=', key)
        .where('state', '=', 'in_progress')
        .execute();
    },

    /**
     * Deletes at most `limit` keys expired at `now`. Rows another transaction holds (a claim
     * replacing that very key, another instance's sweep) are skipped, not waited for.
     */
    async purgeExpired(now: Date, limit: number): Promise<number> {
      const res = await sql`
        DELETE FROM idempotency_keys
        WHERE (partner_id, key) IN (
          SELECT partner_id, key FROM idempotency_keys
          WHERE expires_at <= ${now}::timestamptz
          -- Oldest first, by the expires_at index: unordered, PostgreSQL scans the table for them.
          ORDER BY expires_at
          LIMIT ${limit} FOR UPDATE SKIP LOCKED
        )`.execute(db);
      return Number(res.numAffectedRows ?? 0);
    },
  };
}

export type IdempotencyRepository = ReturnType<typeof createIdempotencyRepository>;
