import type { Db } from '../database.js';

export type IdempotencyClaim =
  | { kind: 'claimed'; paymentId: string | null }
  | { kind: 'replay'; status: number; body: unknown }
  | { kind: 'mismatch' }
  | { kind: 'in_flight' };

/**
 * Idempotency keys live in the database, so concurrent duplicates across instances are decided
 * by the primary key on (partner_id, key), not by process memory.
 */
export function createIdempotencyRepository(db: Db) {
  return {
    async claim(input: { partnerId: string; key: string; requestHash: string; now: Date; lockUntil: Date; expiresAt: Date }): Promise<IdempotencyClaim> {
      const inserted = await db
        .insertInto('idempotency_keys')
        .values({
          partner_id: input.partnerId,
          key: input.key,
          request_hash: input.requestHash,
          state: 'in_progress',
          locked_until: input.lockUntil,
          expires_at: input.expiresAt,
        })
        .onConflict((oc) => oc.columns(['partner_id', 'key']).doNothing())
        .returning('key')
        .executeTakeFirst();
      if (inserted) return { kind: 'claimed', paymentId: null };

      const existing = await db
        .selectFrom('idempotency_keys')
        .selectAll()
        .where('partner_id', '=', input.partnerId)
        .where('key', '=', input.key)
        .executeTakeFirst();
      if (!existing) return { kind: 'in_flight' };
      if (existing.request_hash !== input.requestHash) return { kind: 'mismatch' };
      if (existing.state === 'completed') return { kind: 'replay', status: existing.response_status ?? 201, body: existing.response_body };
      // A released or abandoned claim (crash, upstream failure) is taken over atomically by one caller.
      const taken = await db
        .updateTable('idempotency_keys')
        .set({ locked_until: input.lockUntil })
        .where('partner_id', '=', input.partnerId)
        .where('key', '=', input.key)
        .where('state', '=', 'in_progress')
        .where('locked_until', '<=', input.now)
        .returning('payment_id')
        .executeTakeFirst();
      return taken ? { kind: 'claimed', paymentId: taken.payment_id } : { kind: 'in_flight' };
    },

    async complete(partnerId: string, key: string, status: number, body: unknown): Promise<void> {
      await db
        .updateTable('idempotency_keys')
        .set({ state: 'completed', response_status: status, response_body: JSON.stringify(body) })
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

    async purgeExpired(now: Date): Promise<number> {
      const res = await db.deleteFrom('idempotency_keys').where('expires_at', '<', now).executeTakeFirst();
      return Number(res.numDeletedRows ?? 0);
    },

  };
}

export type IdempotencyRepository = ReturnType<typeof createIdempotencyRepository>;
