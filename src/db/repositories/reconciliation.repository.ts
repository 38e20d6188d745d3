import { sql, type RawBuilder, type Selectable } from 'kysely';
import type { Db } from '../database.js';
import type { DiscrepanciesTable, PaymentsTable, ReconciliationRunsTable, SourceOutcome } from '../db.types.js';
import { SOURCES, type DiscrepancyKind, type DiscrepancyStatus, type ReconciliationStatus, type Source } from '../../domain/vocabulary.js';
import { claimLeased, lanesOf, type ClaimWindow, type LeasedWorkSpec } from '../leased-claim.query.js';
import { isUuid } from '../../domain/uuid.js';
import { asUnitOfWork, type AlsoInTransaction, type Trx } from '../unit-of-work.js';

export type RunRow = Selectable<ReconciliationRunsTable>;
export type DiscrepancyRow = Selectable<DiscrepanciesTable>;

/** A local payment as reconciliation compares it, with its invoice's refNum. */
export interface LocalSettled extends Selectable<PaymentsTable> {
  ref_num: string;
}

export interface DiscrepancyWrite {
  kind: DiscrepancyKind;
  financeDay: string;
  source: Source;
  refNum: string;
  paymentId: string;
  partnerId: string | null;
  localAmount: string | null;
  ministryAmount: string | null;
}

/** One instance's hold of a day and ministry system; its token fences every write under it. */
export interface ReconciliationLease {
  financeDay: string;
  source: Source;
  token: string;
}

const runColumns = ['id', 'finance_day', 'status', 'matched', 'auto_confirmed', 'discrepancies', 'sources', 'operator', 'started_at', 'finished_at'] as const;

const discrepancyColumns = [
  'id', 'kind', 'finance_day', 'source', 'ref_num', 'payment_id', 'partner_id', 'local_amount', 'ministry_amount',
  'status', 'note', 'run_id', 'created_at', 'resolved_at', 'resolved_by',
] as const;

const paymentColumns = [
  'id', 'partner_id', 'invoice_id', 'amount', 'source', 'status', 'failure_reason', 'submitted_at', 'paid_at', 'canceled_at',
  'next_check_at', 'check_attempts', 'status_event', 'status_cause', 'status_detail', 'user_id', 'qr_text', 'remaining_balance',
  'status_check_until', 'status_check_token', 'status_checked_at', 'expiry_ms', 'trace_parent', 'trace_state', 'partner_reference', 'created_at', 'updated_at',
] as const;

/** Findings per INSERT: a busy day's findings would pass the parameters one statement may have. */
const FINDINGS_PER_STATEMENT = 500;

/** The row of a day and system, only while `lease` still holds it. */
function held(db: Db, lease: ReconciliationLease) {
  return db
    .updateTable('reconciliation_sources')
    .where('finance_day', '=', lease.financeDay)
    .where('source', '=', lease.source)
    .where('lease_token', '=', lease.token);
}

async function insertFindings(trx: Trx, runId: string, rows: DiscrepancyWrite[], at: Date): Promise<void> {
  await trx
    .insertInto('discrepancies')
    .values(
      rows.map((r) => ({
        kind: r.kind,
        finance_day: r.financeDay,
        source: r.source,
        ref_num: r.refNum,
        payment_id: r.paymentId,
        partner_id: r.partnerId,
        local_amount: r.localAmount,
        ministry_amount: r.ministryAmount,
        status: 'open' as const,
        run_id: runId,
        created_at: at,
      })),
    )
    .onConflict((oc) =>
      oc
        .columns(['finance_day', 'source', 'kind', 'payment_id'])
        .doUpdateSet((eb) => ({
          local_amount: eb.ref('excluded.local_amount'),
          ministry_amount: eb.ref('excluded.ministry_amount'),
          run_id: eb.ref('excluded.run_id'),
        }))
        .where('discrepancies.status', '=', 'open'),
    )
    .execute();
}

const withRefNum = sql<string>`(SELECT i.ref_num FROM invoices i WHERE i.id = payments.invoice_id)`.as('ref_num');

/** Days and systems whose lease is free and that `pending` selects, in one lane per system. */
const reconciliations = (now: Date, pending: RawBuilder<unknown>, lanes: Partial<Record<string, number>>): LeasedWorkSpec => ({
  table: 'reconciliation_sources',
  key: ['finance_day', 'source'],
  dueColumn: 'next_attempt_at',
  leaseColumn: 'lease_until',
  token: { column: 'lease_token', next: sql`gen_random_uuid()` },
  pending: sql`${pending} AND (lease_until IS NULL OR lease_until <= ${now}::timestamptz)`,
  laneColumn: 'source',
  lanes: lanesOf(lanes),
  alsoSet: sql`updated_at = ${now}::timestamptz`,
  returning: sql`t.finance_day, t.source`,
});

async function claimLeases(db: Db, spec: LeasedWorkSpec, window: ClaimWindow): Promise<ReconciliationLease[]> {
  const rows = await claimLeased<{ finance_day: string; source: Source }, string>(db, spec, window);
  return rows.map((r) => ({ financeDay: r.finance_day, source: r.source, token: r.lease_token }));
}

/** `reads`: where the operator's lists of runs and discrepancies are read from (the replica's routed reads, or the database itself). */
export function createReconciliationRepository(db: Db, reads: Db = db) {
  return {
    // Which instance reconciles a day and ministry system, and until when.

    /** The day's rows for these systems, due at once when new; existing rows keep their state. */
    async ensureSources(financeDay: string, sources: readonly Source[], now: Date): Promise<void> {
      await db
        .insertInto('reconciliation_sources')
        .values(sources.map((source) => ({ finance_day: financeDay, source, status: 'pending' as const, next_attempt_at: now })))
        .onConflict((oc) => oc.doNothing())
        .execute();
    },

    /**
     * Takes the day and source for this instance until `leaseUntil`, due or not, unless another
     * instance holds it: one reconciliation of a day and source at a time. The hold's token, or
     * null when another instance holds it.
     */
    async acquire(financeDay: string, source: Source, now: Date, leaseUntil: Date): Promise<ReconciliationLease | null> {
      const [lease] = await claimLeases(db, reconciliations(now, sql`finance_day = ${financeDay}`, { [source]: 1 }), { now, leaseUntil, batch: 1, dueBy: null });
      return lease ?? null;
    },

    /** Takes up to `limit` due days and systems not yet reconciled, the systems taking turns, oldest first within each. */
    async claimDue(now: Date, leaseUntil: Date, limit: number): Promise<ReconciliationLease[]> {
      const lanes = Object.fromEntries(SOURCES.map((source) => [source, limit]));
      return claimLeases(db, reconciliations(now, sql`status <> 'completed'`, lanes), { now, leaseUntil, batch: limit });
    },

    /** Extends the hold; false when it is no longer this one's (it ran out and another took it). */
    async renewLease(lease: ReconciliationLease, leaseUntil: Date): Promise<boolean> {
      const row = await held(db, lease).set({ lease_until: leaseUntil }).returning('source').executeTakeFirst();
      return row !== undefined;
    },

    /** Ends the hold: completed, or failed and due again at `retryAt`; false (nothing changed) when it was no longer this one's. */
    async release(lease: ReconciliationLease, input: { now: Date; error: string | null; retryAt: Date }): Promise<boolean> {
      const row = await held(db, lease)
        .set((eb) => ({
          status: input.error ? 'failed' : 'completed',
          attempts: eb('attempts', '+', 1),
          lease_until: null,
          lease_token: null,
          last_error: input.error,
          completed_at: input.error ? null : input.now,
          next_attempt_at: input.retryAt,
          updated_at: input.now,
        }))
        .returning('source')
        .executeTakeFirst();
      return row !== undefined;
    },

    /**
     * The last time each system's reconciliation completed (for the metrics): the first entry of
     * each system's range of reconciliation_sources_completed_idx (migration 035), so the days
     * kept since the first never add to the read.
     */
    async lastCompleted(): Promise<{ source: Source; at: Date }[]> {
      const { rows } = await sql<{ source: Source; at: Date | null }>`
        SELECT s.source, x.at
        FROM (VALUES ${sql.join(SOURCES.map((source) => sql`(${sql.lit(source)})`))}) AS s (source)
        CROSS JOIN LATERAL (
          SELECT r.completed_at AS at FROM reconciliation_sources r
          WHERE r.status = 'completed' AND r.source = s.source
          ORDER BY r.completed_at DESC
          LIMIT 1
        ) x`.execute(db);
      return rows.flatMap((r) => (r.at ? [{ source: r.source, at: new Date(r.at) }] : []));
    },

    // The runs, each one reconciliation of a day, and the findings they record.

    async createRun(financeDay: string, operator: string | null, at: Date): Promise<string> {
      const row = await db
        .insertInto('reconciliation_runs')
        .values({ finance_day: financeDay, status: 'running', sources: '[]', operator, started_at: at })
        .returning('id')
        .executeTakeFirstOrThrow();
      return row.id;
    },

    async finishRun(id: string, status: ReconciliationStatus, outcomes: SourceOutcome[], at: Date): Promise<RunRow> {
      const sum = (f: (o: SourceOutcome) => number) => outcomes.reduce((n, o) => n + f(o), 0);
      return db
        .updateTable('reconciliation_runs')
        .set({
          status,
          matched: sum((o) => o.matched),
          auto_confirmed: sum((o) => o.autoConfirmed),
          discrepancies: sum((o) => o.discrepancies),
          sources: JSON.stringify(outcomes),
          finished_at: at,
        })
        .where('id', '=', id)
        .returning(runColumns)
        .executeTakeFirstOrThrow();
    },

    async listRuns(financeDay: string | undefined, limit: number): Promise<RunRow[]> {
      let query = reads.selectFrom('reconciliation_runs').select(runColumns).orderBy('started_at', 'desc').orderBy('id', 'desc').limit(limit);
      if (financeDay) query = query.where('finance_day', '=', financeDay);
      return query.execute();
    },

    /**
     * Records the findings of `runId` and resolves the open ones of the day and system it no longer
     * found (the books agree now), in one transaction under the hold, which it locks: a holder that
     * lost its lease writes nothing (false), and no new holder can take the day meanwhile. A finding
     * already on record keeps its row (and, if resolved, its resolution); an open one takes the
     * latest amounts and run.
     */
    async recordFindings(lease: ReconciliationLease, runId: string, rows: DiscrepancyWrite[], at: Date): Promise<{ recorded: number; cleared: number } | null> {
      return db.transaction().execute(async (trx) => {
        const hold = await trx
          .selectFrom('reconciliation_sources')
          .select('source')
          .where('finance_day', '=', lease.financeDay)
          .where('source', '=', lease.source)
          .where('lease_token', '=', lease.token)
          .forUpdate()
          .executeTakeFirst();
        if (!hold) return null;
        for (let i = 0; i < rows.length; i += FINDINGS_PER_STATEMENT) await insertFindings(trx, runId, rows.slice(i, i + FINDINGS_PER_STATEMENT), at);
        const cleared = await trx
          .updateTable('discrepancies')
          .set({ status: 'resolved', resolved_at: at, resolved_by: 'reconciliation', note: `No longer found by reconciliation run ${runId}` })
          .where('finance_day', '=', lease.financeDay)
          .where('source', '=', lease.source)
          .where('status', '=', 'open')
          .where((eb) => eb.or([eb('run_id', 'is', null), eb('run_id', '<>', runId)]))
          .returning('id')
          .execute();
        return { recorded: rows.length, cleared: cleared.length };
      });
    },

    // Local payments as reconciliation compares them with a settlement.

    /** The payments these settlement ids name, with their invoice's refNum; ids that are not ours are skipped. */
    async paymentsByIds(ids: string[]): Promise<LocalSettled[]> {
      const uuids = ids.filter(isUuid);
      if (uuids.length === 0) return [];
      return db
        .selectFrom('payments')
        .select(paymentColumns)
        .select(withRefNum)
        // One array parameter: a busy day's settlement names more payments than a query may have parameters.
        .where('id', '=', sql<string>`ANY(${uuids}::uuid[])`)
        .execute();
    },

    /** One page of the system's payments confirmed with a settlement time in [from, to), in (paid_at, id) order. */
    async confirmedBetween(source: Source, from: Date, to: Date, after: { paidAt: Date; id: string } | null, limit: number): Promise<LocalSettled[]> {
      let query = db
        .selectFrom('payments')
        .select(paymentColumns)
        .select(withRefNum)
        .where('source', '=', source)
        .where('status', '=', 'confirmed')
        .where('paid_at', '>=', from)
        .where('paid_at', '<', to)
        .orderBy('paid_at')
        .orderBy('id')
        .limit(limit);
      if (after) query = query.where(sql<boolean>`(paid_at, id) > (${after.paidAt}::timestamptz, ${after.id}::uuid)`);
      return query.execute();
    },

    // The findings as operators list and resolve them.

    async listDiscrepancies(filter: { status?: DiscrepancyStatus; financeDay?: string; paymentId?: string }, limit: number): Promise<DiscrepancyRow[]> {
      let query = reads.selectFrom('discrepancies').select(discrepancyColumns).orderBy('created_at', 'desc').orderBy('id', 'desc').limit(limit);
      if (filter.status) query = query.where('status', '=', filter.status);
      if (filter.financeDay) query = query.where('finance_day', '=', filter.financeDay);
      if (filter.paymentId) query = query.where('payment_id', '=', filter.paymentId);
      return query.execute();
    },

    /**
     * open -> resolved with the operator's note, and `also` in the same transaction; `missing` or
     * `resolved` (already, by someone else) leave it as it is.
     */
    async resolveDiscrepancy(
      id: string,
      input: { note: string; operator: string; at: Date },
      also: AlsoInTransaction<{ before: DiscrepancyRow; after: DiscrepancyRow }>,
    ): Promise<DiscrepancyRow | 'missing' | 'resolved'> {
      return db.transaction().execute(async (trx) => {
        const before = await trx.selectFrom('discrepancies').select(discrepancyColumns).where('id', '=', id).forUpdate().executeTakeFirst();
        if (!before) return 'missing' as const;
        if (before.status !== 'open') return 'resolved' as const;
        const after = await trx
          .updateTable('discrepancies')
          .set({ status: 'resolved', note: input.note, resolved_at: input.at, resolved_by: input.operator })
          .where('id', '=', id)
          .returning(discrepancyColumns)
          .executeTakeFirstOrThrow();
        await also(asUnitOfWork(trx), { before, after });
        return after;
      });
    },

    /**
     * Open discrepancies by kind, for the metrics: the open range of discrepancies_status_idx,
     * never the resolved ones kept beside them. The status is a literal so that a prepared
     * statement's generic plan, which cannot tell a rare word from a common one, reads that range too.
     */
    async openByKind(): Promise<Record<string, number>> {
      const rows = await db
        .selectFrom('discrepancies')
        .select(['kind', (eb) => eb.fn.countAll<string>().as('n')])
        .where('status', '=', sql.lit('open'))
        .groupBy('kind')
        .execute();
      return Object.fromEntries(rows.map((r) => [r.kind, Number(r.n)]));
    },
  };
}

export type ReconciliationRepository = ReturnType<typeof createReconciliationRepository>;
