import { sql } from 'kysely';
import type { Db } from '../database.js';
import { SOURCES } from '../../domain/vocabulary.js';

export interface SummaryRow {
  total: number;
  open: number;
  overdue: number;
  paid: number;
  /** Decimal string: summed as NUMERIC in the database. */
  amount_due: string;
}

/**
 * A counter kind's rows for one partner or all: the rolled-up counters plus the deltas not yet
 * folded in. The kind is a literal: with a parameter, a prepared statement's generic plan of the
 * read over every partner scans all the counters (each partner's days and due dates) instead of
 * the kind's key range.
 */
function counterRows(db: Db, kind: string, partnerId?: string) {
  const rolled = db.selectFrom('counters').select(['label', 'bucket', 'n', 'amount']).where('kind', '=', sql.lit(kind));
  const pending = db.selectFrom('counter_deltas').select(['label', 'bucket', 'n', 'amount']).where('kind', '=', sql.lit(kind));
  return partnerId === undefined
    ? rolled.unionAll(pending)
    : rolled.where('partner_id', '=', partnerId).unionAll(pending.where('partner_id', '=', partnerId));
}

/**
 * Reports read from the counters of migration 007 (kept by triggers in the transactions that
 * change the rows), so their cost follows the number of buckets, never the history.
 */
export function createReportRepository(db: Db) {
  return {
    /**
     * Counts over the invoices this partner has retrieved. An open invoice's bucket is its due
     * date (`infinity` without one), so `bucket < now` is the overdue rule of `isOverdue`.
     */
    async summary(partnerId: string, now: Date): Promise<SummaryRow> {
      return db
        .selectFrom(counterRows(db, 'invoice', partnerId).as('c'))
        .select([
          sql<number>`coalesce(sum(c.n), 0)::int`.as('total'),
          sql<number>`coalesce(sum(c.n) FILTER (WHERE c.label = 'open' AND c.bucket >= ${now}), 0)::int`.as('open'),
          sql<number>`coalesce(sum(c.n) FILTER (WHERE c.label = 'open' AND c.bucket < ${now}), 0)::int`.as('overdue'),
          sql<number>`coalesce(sum(c.n) FILTER (WHERE c.label = 'paid'), 0)::int`.as('paid'),
          sql<string>`coalesce(sum(c.amount) FILTER (WHERE c.label = 'open'), 0)::text`.as('amount_due'),
        ])
        .executeTakeFirstOrThrow();
    },

    /**
     * Where row `offset` of the partner's payments, newest first, lies: the UTC day holding it
     * (null past the end) and how many of the partner's payments are newer than that day.
     */
    async paymentPosition(partnerId: string, offset: number): Promise<{ total: number; day: Date | null; newer: number }> {
      const { rows } = await sql<{ total: string; day: Date | null; newer: string | null }>`
        WITH days AS (
          SELECT c.bucket, sum(c.n) AS n FROM (${counterRows(db, 'payment_day', partnerId)}) c GROUP BY c.bucket
        ), ranked AS (
          SELECT bucket, n, sum(n) OVER (ORDER BY bucket DESC) - n AS newer FROM days
        )
        SELECT (SELECT coalesce(sum(n), 0) FROM days) AS total, r.bucket AS day, r.newer
        FROM (SELECT 1) AS one
        LEFT JOIN ranked r ON r.newer <= ${offset} AND r.newer + r.n > ${offset}`.execute(db);
      const row = rows[0];
      return { total: Number(row?.total ?? 0), day: row?.day ?? null, newer: Number(row?.newer ?? 0) };
    },

    /**
     * Payments by status over every partner, for the metrics gauge: one counter row per partner
     * and status plus the deltas the roll-up has not folded yet. A status none holds any more
     * has no row, as it would have none in a count of the payments.
     */
    async paymentsByStatus(): Promise<Record<string, number>> {
      const rows = await db
        .selectFrom(counterRows(db, 'payment_status').as('c'))
        .select(['c.label', sql<string>`sum(c.n)`.as('n')])
        .groupBy('c.label')
        .having(sql<boolean>`sum(c.n) <> 0`)
        .execute();
      return Object.fromEntries(rows.map((r) => [r.label, Number(r.n)]));
    },

    /**
     * Unresolved payments whose check is due, per ministry system: the confirmation job's backlog.
     * Each system's due range of the unresolved payments' index (its predicate written as the
     * index's literal, so a generic plan uses it too), never the ones waiting for a later check.
     */
    async unresolvedBySource(): Promise<Record<string, number>> {
      const rows = await db
        .selectFrom('payments')
        .select(['source', sql<string>`count(*)`.as('n')])
        .where(sql<boolean>`status IN ('pending', 'submitted')`)
        .where('source', 'in', SOURCES)
        .where('next_check_at', '<=', sql<Date>`now()`)
        .groupBy('source')
        .execute();
      return Object.fromEntries(rows.map((r) => [r.source, Number(r.n)]));
    },

    /**
     * Per ministry system, since when its longest-unchecked submitted payment has gone without a
     * status check: its last check's end, or its submission when it has had none. The first entry
     * of each system's range of payments_unchecked_idx (migration 035), however many wait.
     */
    async oldestUncheckedBySource(): Promise<Record<string, Date>> {
      const { rows } = await sql<{ source: string; since: Date }>`
        SELECT s.source, x.since
        FROM (VALUES ${sql.join(SOURCES.map((source) => sql`(${sql.lit(source)})`))}) AS s (source)
        CROSS JOIN LATERAL (
          SELECT coalesce(p.status_checked_at, p.submitted_at, p.created_at) AS since
          FROM payments p
          WHERE p.status = 'submitted' AND p.source = s.source
          ORDER BY coalesce(p.status_checked_at, p.submitted_at, p.created_at)
          LIMIT 1
        ) x`.execute(db);
      return Object.fromEntries(rows.map((r) => [r.source, new Date(r.since)]));
    },
  };
}

export type ReportRepository = ReturnType<typeof createReportRepository>;
