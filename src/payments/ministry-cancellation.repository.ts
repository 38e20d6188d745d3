import { sql, type Selectable } from 'kysely';
import type { Db } from '../db/database.js';
import { claimLeased, lanesOf, totalFree, type Leased, type LeasedWorkSpec } from '../db/leased-claim.query.js';
import type { MinistryCancellationsTable } from '../db/db.types.js';
import { executorOf, trxOf, type UnitOfWork } from '../db/unit-of-work.js';
import { columnList, tableColumns } from '../db/table-columns.js';
import type { Source } from '../domain/vocabulary.js';

export type MinistryCancellationRow = Selectable<MinistryCancellationsTable>;
/** A claimed cancellation, with the trace context of the request that created its payment. */
export type ClaimedCancellation = Leased<MinistryCancellationRow & { trace_parent: string | null; trace_state: string | null }>;

/** A cancellation row's columns, named by every query that returns whole rows. */
const CANCELLATION_COLUMNS = tableColumns<MinistryCancellationsTable>()([
  'payment_id', 'source', 'ref_num', 'reason', 'attempts', 'next_attempt_at', 'last_error', 'done_at', 'created_at', 'kind',
]);

const INTENT_REASONS = { partner: 'canceled by the partner', expiry: 'expired unpaid' } as const;

/** Cancellations not yet confirmed by the ministry, in one lane per ministry system with that system's free slots. */
const dueCancellations = (free: Partial<Record<string, number>>): LeasedWorkSpec => ({
  table: 'ministry_cancellations',
  key: ['payment_id'],
  dueColumn: 'next_attempt_at',
  token: { column: 'attempts', next: sql`t.attempts + 1` },
  pending: sql`done_at IS NULL`,
  laneColumn: 'source',
  lanes: lanesOf(free),
  returning: columnList(CANCELLATION_COLUMNS, 't'),
  select: sql`SELECT c.*, p.trace_parent, p.trace_state FROM claimed c LEFT JOIN payments p ON p.id = c.payment_id`,
});

/**
 * The durable list of payments the service cancels at the ministry (refused after the ministry
 * accepted them, canceled by the partner, expired): each row is retried until the ministry
 * confirms the cancellation, across crashes and instances.
 */
export function createMinistryCancellationRepository(db: Db) {
  return {
    /** Written in the transaction that refuses the payment, so the refusal never exists without it. */
    async add(uow: UnitOfWork, input: { paymentId: string; source: Source; refNum: string; reason: string; dueAt: Date }): Promise<void> {
      await trxOf(uow)
        .insertInto('ministry_cancellations')
        .values({ payment_id: input.paymentId, source: input.source, ref_num: input.refNum, reason: input.reason, next_attempt_at: input.dueAt })
        .onConflict((oc) => oc.column('payment_id').doNothing())
        .execute();
    },

    /**
     * A cancel the service means to make, recorded before the ministry is asked, in the transaction
     * that found the payment cancelable: the partner's, or the expiry's. Due only after `dueAt`,
     * so the job leaves the caller its own try; a second intent for the payment is ignored.
     */
    async addIntent(uow: UnitOfWork, input: { paymentId: string; source: Source; refNum: string; kind: 'partner' | 'expiry'; dueAt: Date }): Promise<void> {
      await trxOf(uow)
        .insertInto('ministry_cancellations')
        .values({ payment_id: input.paymentId, source: input.source, ref_num: input.refNum, reason: INTENT_REASONS[input.kind], kind: input.kind, next_attempt_at: input.dueAt })
        .onConflict((oc) => oc.column('payment_id').doNothing())
        .execute();
    },

    /** Claims due cancellations, at most `limits[source]` per ministry system, leased until `leaseUntil`. */
    async claimDue(now: Date, leaseUntil: Date, limits: Partial<Record<string, number>>): Promise<ClaimedCancellation[]> {
      return claimLeased(db, dueCancellations(limits), { now, leaseUntil, batch: totalFree(limits) });
    },

    async markDone(paymentId: string, at: Date, uow?: UnitOfWork): Promise<void> {
      await executorOf(db, uow).updateTable('ministry_cancellations').set({ done_at: at, last_error: null }).where('payment_id', '=', paymentId).where('done_at', 'is', null).execute();
    },

    /**
     * Records a failed attempt and when to try again. Fenced by the lease token (the attempt
     * count) the caller saw, the claim's or, when it was not claimed, the row's: a later claim has
     * counted on, so a late writer changes nothing. False then.
     */
    async markFailed(paymentId: string, error: string, retryAt: Date, leaseToken: number): Promise<boolean> {
      const row = await db
        .updateTable('ministry_cancellations')
        .set({ last_error: error.slice(0, 500), next_attempt_at: retryAt })
        .where('payment_id', '=', paymentId)
        .where('done_at', 'is', null)
        .where('attempts', '=', leaseToken)
        .returning('payment_id')
        .executeTakeFirst();
      return row !== undefined;
    },

    async find(paymentId: string): Promise<MinistryCancellationRow | null> {
      return (await db.selectFrom('ministry_cancellations').select(CANCELLATION_COLUMNS).where('payment_id', '=', paymentId).executeTakeFirst()) ?? null;
    },
  };
}

export type MinistryCancellationRepository = ReturnType<typeof createMinistryCancellationRepository>;
