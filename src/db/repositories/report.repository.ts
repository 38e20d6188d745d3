import { sql } from 'kysely';
import type { Db } from '../database.js';
import { overdueSql } from '../invoice-status.sql.js';

export interface SummaryRow {
  total: number;
  open: number;
  overdue: number;
  paid: number;
  /** Decimal string: summed as NUMERIC in the database. */
  amount_due: string;
}

export function createReportRepository(db: Db) {
  return {
    /** Counts over the invoices this partner has retrieved; overdue is derived from the due date. */
    async summary(partnerId: string, now: Date): Promise<SummaryRow> {
      const overdue = overdueSql('i', now);
      const row = await db
        .selectFrom('partner_invoices as pi')
        .innerJoin('invoices as i', 'i.id', 'pi.invoice_id')
        .where('pi.partner_id', '=', partnerId)
        .select([
          sql<number>`count(*)::int`.as('total'),
          sql<number>`(count(*) FILTER (WHERE i.status = 'open' AND NOT ${overdue}))::int`.as('open'),
          sql<number>`(count(*) FILTER (WHERE ${overdue}))::int`.as('overdue'),
          sql<number>`(count(*) FILTER (WHERE i.status = 'paid'))::int`.as('paid'),
          sql<string>`coalesce(sum(i.amount) FILTER (WHERE i.status = 'open'), 0)::text`.as('amount_due'),
        ])
        .executeTakeFirstOrThrow();
      return row;
    },
  };
}

export type ReportRepository = ReturnType<typeof createReportRepository>;
