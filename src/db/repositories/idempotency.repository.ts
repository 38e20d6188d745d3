import { sql } from 'kysely';
import type { Db } from '../database.js';

/** How the first request with a key ended: the answer a replay repeats. */
export type StoredOutcome = 'created' | 'rejected';

/** A request's hold on its key: every write under it presents the token its claim returned. */
export interface IdempotencyLease {
  partnerId: string;
  key: string;
  token: string;
}

export type IdempotencyClaim =
  | { kind: 'claimed'; paymentId: string | null; token: string }
  | { kind: 'replay'; outcome: StoredOutcome; body: unknown }
  | { kind: 'mismatch' }
  | { kind: 'in_flight' };

/** What the key says to a request that no longer holds it: the answer it stores, or that it has none yet. */
export type IdempotencyAnswer = Extract<IdempotencyClaim, { kind: 'replay' | 'in_flight' }>;

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
async function insertOrReplaceExpired(db: Db, input: ClaimInput): Promise<string | null> {
  const { rows } = await sql<{ lease_token: string }>`
    INSERT INTO idempotency_keys (partner_id, key, request_hash, state, locked_until, lease_token, expires_at)
    VALUES (${input.partnerId}::uuid, ${input.key}, ${input.requestHash}, 'in_progress', ${input.lockUntil}::timestamptz, gen_random_uuid(), ${input.expiresAt}::timestamptz)
    ON CONFLICT (partner_id, key) DO UPDATE SET
      request_hash = EXCLUDED.request_hash,
      state = EXCLUDED.state,
      locked_until = EXCLUDED.locked_until,
      lease_token = EXCLUDED.lease_token,
      expires_at = EXCLUDED.expires_at,
      payment_id = NULL,
      response_status = NULL,
      response_body = NULL,
      created_at = now()
    WHERE idempotency_keys.expires_at <= ${input.now}::timestamptz
    RETURNING lease_token`.execute(db);
  return rows[0]?.lease_token ?? null;
}

/** Claims the key for one request, or says why not: a replay, another request's key, or one in flight. */
async function claimKey(db: Db, input: ClaimInput): Promise<IdempotencyClaim> {
  // The row can vanish between the upsert and the read (a sweep or a release); then claim afresh.
  for (let attempt = 1; ; attempt++) {
    const token = await insertOrReplaceExpired(db, input);
    if (token) return { kind: 'claimed', paymentId: null, token };

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
    // A released or abandoned claim (crash, upstream failure, a holder stalled past its lease) is
    // taken over atomically by one caller; the new token fences the old holder off.
    const taken = await db
      .updateTable('idempotency_keys')
      .set({ locked_until: input.lockUntil, lease_token: sql<string>`gen_random_uuid()` })
      .where('partner_id', '=', input.partnerId)
      .where('key', '=', input.key)
      .where('state', '=', 'in_progress')
      .where('locked_until', '<=', input.now)
      .where('expires_at', '>', input.now)
      .returning(['payment_id', 'lease_token'])
      .executeTakeFirst();
    return taken?.lease_token ? { kind: 'claimed', paymentId: taken.payment_id, token: taken.lease_token } : { kind: 'in_flight' };
  }
}

/** The key while `lease` is its current claim and no answer is stored yet. */
const held = (db: Db, lease: IdempotencyLease) =>
  db
    .updateTable('idempotency_keys')
    .where('partner_id', '=', lease.partnerId)
    .where('key', '=', lease.key)
    .where('lease_token', '=', lease.token)
    .where('state', '=', 'in_progress');

/**
 * Idempotency keys live in the database, so concurrent duplicates across instances are decided
 * by the primary key on (partner_id, key), not by process memory.
 */
export function createIdempotencyRepository(db: Db) {
  return {
    claim: (input: ClaimInput): Promise<IdempotencyClaim> => claimKey(db, input),

    /** Stores the answer a replay repeats; false, and nothing written, when another request has taken the key over. */
    async complete(lease: IdempotencyLease, outcome: StoredOutcome, body: unknown): Promise<boolean> {
      const res = await held(db, lease)
        .set({ state: 'completed', response_status: STATUS_OF_OUTCOME[outcome], response_body: JSON.stringify(body) })
        .executeTakeFirst();
      return res.numUpdatedRows > 0n;
    },

    /**
     * Gives the key back: forgotten when no payment was made, unlocked for a retry otherwise.
     * False, and nothing changed, when another request has taken the key over.
     */
    async release(lease: IdempotencyLease, now: Date): Promise<boolean> {
      const forgotten = await db
        .deleteFrom('idempotency_keys')
        .where('partner_id', '=', lease.partnerId)
        .where('key', '=', lease.key)
        .where('lease_token', '=', lease.token)
        .where('state', '=', 'in_progress')
        .where('payment_id', 'is', null)
        .executeTakeFirst();
      if (forgotten.numDeletedRows > 0n) return true;
      const unlocked = await held(db, lease).set({ locked_until: now }).executeTakeFirst();
      return unlocked.numUpdatedRows > 0n;
    },

    /**
     * The answer for a request that lost its key: the stored one when the key's current request
     * finished and is the same request, otherwise none yet (another request holds it, gave it
     * back, or the key was reused after expiry).
     */
    async answerFor(partnerId: string, key: string, requestHash: string): Promise<IdempotencyAnswer> {
      const row = await db
        .selectFrom('idempotency_keys')
        .select(['request_hash', 'state', 'response_status', 'response_body'])
        .where('partner_id', '=', partnerId)
        .where('key', '=', key)
        .executeTakeFirst();
      if (row?.state !== 'completed' || row.request_hash !== requestHash) return { kind: 'in_flight' };
      return { kind: 'replay', outcome: outcomeOfStatus(row.response_status), body: row.response_body };
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
