import { sql, type Kysely, type Selectable } from 'kysely';
import type { Db } from '../database.js';
import { claimDueBySource, type DueClaim } from '../due-claim.query.js';
import type { Database, MinistryCancellationsTable } from '../db.types.js';
import type { Source } from '../../domain/vocabulary.js';

export type MinistryCancellationRow = Selectable<MinistryCancellationsTable>;

const DUE_CANCELLATIONS: DueClaim = {
  table: 'ministry_cancellations',
  key: 'payment_id',
  dueColumn: 'next_attempt_at',
  attemptsColumn: 'attempts',
  pending: sql`done_at IS NULL`,
  returning: sql`*`,
};

/**
 * The durable list of payments the ministry accepted but the service refused: each row is retried
 * until the ministry confirms the cancellation, across crashes and instances.
 */
export function createMinistryCancellationRepository(db: Db) {
  return {
    /** Written in the transaction that refuses the payment, so the refusal never exists without it. */
    async add(trx: Kysely<Database>, input: { paymentId: string; source: Source; refNum: string; reason: string; dueAt: Date }): Promise<void> {
      await trx
        .insertInto('ministry_cancellations')
        .values({ payment_id: input.paymentId, source: input.source, ref_num: input.refNum, reason: input.reason, next_attempt_at: input.dueAt })
        .onConflict((oc) => oc.column('payment_id').doNothing())
        .execute();
    },

    /**
     * The partner's cancel, recorded before the ministry is asked, in the transaction that found
     * the payment cancelable. Due only after `dueAt`, so the job leaves the request its own try.
     */
    async addPartnerIntent(trx: Kysely<Database>, input: { paymentId: string; source: Source; refNum: string; dueAt: Date }): Promise<void> {
      await trx
        .insertInto('ministry_cancellations')
        .values({ payment_id: input.paymentId, source: input.source, ref_num: input.refNum, reason: 'canceled by the partner', kind: 'partner', next_attempt_at: input.dueAt })
        .onConflict((oc) => oc.column('payment_id').doNothing())
        .execute();
    },

    /** Claims due cancellations, at most `limits[source]` per ministry system, leased until `leaseUntil`. */
    async claimDue(now: Date, leaseUntil: Date, limits: Partial<Record<string, number>>): Promise<MinistryCancellationRow[]> {
      return claimDueBySource(db, DUE_CANCELLATIONS, now, leaseUntil, limits);
    },

    async markDone(paymentId: string, at: Date, trx: Kysely<Database> = db): Promise<void> {
      await trx.updateTable('ministry_cancellations').set({ done_at: at, last_error: null }).where('payment_id', '=', paymentId).where('done_at', 'is', null).execute();
    },

    /**
     * Records a failed attempt and when to try again. Fenced by the attempt count the caller saw
     * (the claim's, or the row's when it was not claimed): a later claim has counted on, so a late
     * writer changes nothing. False then.
     */
    async markFailed(paymentId: string, error: string, retryAt: Date, seenAttempts: number): Promise<boolean> {
      const row = await db
        .updateTable('ministry_cancellations')
        .set({ last_error: error.slice(0, 500), next_attempt_at: retryAt })
        .where('payment_id', '=', paymentId)
        .where('done_at', 'is', null)
        .where('attempts', '=', seenAttempts)
        .returning('payment_id')
        .executeTakeFirst();
      return row !== undefined;
    },

    async find(paymentId: string): Promise<MinistryCancellationRow | null> {
      return (await db.selectFrom('ministry_cancellations').selectAll().where('payment_id', '=', paymentId).executeTakeFirst()) ?? null;
    },
  };
}

export type MinistryCancellationRepository = ReturnType<typeof createMinistryCancellationRepository>;
