import { sql, type Selectable } from 'kysely';
import type { Db } from '../database.js';
import type { PaymentHistoryTable } from '../db.types.js';
import type { PaymentStatus, Source } from '../../domain/vocabulary.js';
import { tableColumns } from '../table-columns.js';

export interface PaymentSearch {
  paymentId?: string;
  invoiceId?: string;
  refNum?: string;
  partnerId?: string;
  status?: PaymentStatus;
  from?: Date;
  to?: Date;
}

export interface PaymentListRow {
  id: string;
  partner_id: string;
  invoice_id: string;
  ref_num: string;
  source: Source;
  amount: string;
  status: PaymentStatus;
  failure_reason: string | null;
  created_at: Date;
  updated_at: Date;
  submitted_at: Date | null;
  paid_at: Date | null;
  canceled_at: Date | null;
}

export type HistoryRow = Selectable<PaymentHistoryTable>;

const HISTORY_COLUMNS = tableColumns<PaymentHistoryTable>()(['id', 'payment_id', 'from_status', 'to_status', 'event', 'cause', 'detail', 'at']);

/** The operator's view of payments across partners: search with keyset paging, and timelines. */
export function createPaymentSearchRepository(db: Db) {
  const base = () =>
    db
      .selectFrom('payments as p')
      .innerJoin('invoices as i', 'i.id', 'p.invoice_id')
      .select(['p.id', 'p.partner_id', 'p.invoice_id', 'i.ref_num', 'p.source', 'p.amount', 'p.status', 'p.failure_reason', 'p.created_at', 'p.updated_at', 'p.submitted_at', 'p.paid_at', 'p.canceled_at']);

  return {
    /**
     * Newest first; `after` is the last id of the previous page (keyset: the page after it in
     * (created_at, id) order, however deep). An invoice or refNum finds every payment that held the
     * invoice, linked ones included.
     */
    async search(filter: PaymentSearch, after: string | null, limit: number): Promise<PaymentListRow[]> {
      let q = base().orderBy('p.created_at', 'desc').orderBy('p.id', 'desc').limit(limit);
      if (filter.paymentId) q = q.where('p.id', '=', filter.paymentId);
      if (filter.partnerId) q = q.where('p.partner_id', '=', filter.partnerId);
      if (filter.status) q = q.where('p.status', '=', filter.status);
      if (filter.from) q = q.where('p.created_at', '>=', filter.from);
      if (filter.to) q = q.where('p.created_at', '<', filter.to);
      if (filter.invoiceId) {
        const invoiceId = filter.invoiceId;
        q = q.where('p.id', 'in', (eb) => eb.selectFrom('payment_invoices').select('payment_id').where('invoice_id', '=', invoiceId));
      }
      if (filter.refNum) {
        const refNum = filter.refNum;
        q = q.where('p.id', 'in', (eb) =>
          eb.selectFrom('payment_invoices as pi').innerJoin('invoices as ri', 'ri.id', 'pi.invoice_id').select('pi.payment_id').where('ri.ref_num', '=', refNum),
        );
      }
      if (after) q = q.where(sql<boolean>`(p.created_at, p.id) < (SELECT c.created_at, c.id FROM payments c WHERE c.id = ${after}::uuid)`);
      return q.execute();
    },

    async find(id: string): Promise<(PaymentListRow & { invoiceIds: string[] }) | null> {
      const row = await base()
        .select(sql<string[]>`(SELECT coalesce(jsonb_agg(pi.invoice_id ORDER BY pi.position), '[]'::jsonb) FROM payment_invoices pi WHERE pi.payment_id = p.id)`.as('invoiceIds'))
        .where('p.id', '=', id)
        .executeTakeFirst();
      return row ?? null;
    },

    async timeline(id: string): Promise<HistoryRow[]> {
      return db.selectFrom('payment_history').select(HISTORY_COLUMNS).where('payment_id', '=', id).orderBy('id').execute();
    },
  };
}

export type PaymentSearchRepository = ReturnType<typeof createPaymentSearchRepository>;
