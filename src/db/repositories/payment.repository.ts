import { sql, type Kysely, type Selectable, type Transaction } from 'kysely';
import type { Db } from '../database.js';
import type { Database, PaymentsTable, PaymentStatus } from '../db.types.js';

export type PaymentRow = Selectable<PaymentsTable>;
type Trx = Transaction<Database>;

export interface PaymentDetail extends PaymentRow {
  invoiceIds: string[];
}

async function invoiceIdsOf(db: Kysely<Database>, paymentId: string): Promise<string[]> {
  const rows = await db
    .selectFrom('payment_invoices')
    .select('invoice_id')
    .where('payment_id', '=', paymentId)
    .orderBy('position')
    .execute();
  return rows.map((r) => r.invoice_id);
}

export function createPaymentRepository(db: Db) {
  async function withInvoices(row: PaymentRow | undefined, trx: Kysely<Database> = db): Promise<PaymentDetail | null> {
    return row ? { ...row, invoiceIds: await invoiceIdsOf(trx, row.id) } : null;
  }

  return {
    transaction: <T>(fn: (trx: Trx) => Promise<T>) => db.transaction().execute(fn),

    /** Inserts a pending payment holding its invoice; the partial unique index refuses a second holder. */
    async insertPending(trx: Trx, input: { partnerId: string; invoiceId: string; amount: string; nextCheckAt: Date }): Promise<PaymentRow> {
      const row = await trx
        .insertInto('payments')
        .values({ partner_id: input.partnerId, invoice_id: input.invoiceId, amount: input.amount, status: 'pending', next_check_at: input.nextCheckAt })
        .returningAll()
        .executeTakeFirstOrThrow();
      await trx.insertInto('payment_invoices').values({ payment_id: row.id, invoice_id: input.invoiceId, position: 0, active: true }).execute();
      return row;
    },

    /** Linked invoices the ministry settles together; one already held by another payment is skipped. */
    async addLinkedInvoices(trx: Trx, paymentId: string, invoiceIds: string[]): Promise<void> {
      if (invoiceIds.length === 0) return;
      await trx
        .insertInto('payment_invoices')
        .values(invoiceIds.map((invoice_id, i) => ({ payment_id: paymentId, invoice_id, position: i + 1, active: true })))
        .onConflict((oc) => oc.doNothing())
        .execute();
    },

    /** Moves a payment only if it is still in one of `from`; returns null when another actor moved it first. */
    async transition(
      trx: Trx,
      id: string,
      from: PaymentStatus[],
      to: PaymentStatus,
      extra: { failureReason?: string; paidAt?: Date; canceledAt?: Date; nextCheckAt?: Date | null } = {},
    ): Promise<PaymentRow | null> {
      const row = await trx
        .updateTable('payments')
        .set({
          status: to,
          updated_at: new Date(),
          ...(extra.failureReason !== undefined ? { failure_reason: extra.failureReason } : {}),
          ...(extra.paidAt !== undefined ? { paid_at: extra.paidAt } : {}),
          ...(extra.canceledAt !== undefined ? { canceled_at: extra.canceledAt } : {}),
          ...(extra.nextCheckAt !== undefined ? { next_check_at: extra.nextCheckAt } : {}),
        })
        .where('id', '=', id)
        .where('status', 'in', from)
        .returningAll()
        .executeTakeFirst();
      return row ?? null;
    },

    /** Releases the payment's hold on its invoices and sets their stored status; returns the released ids. */
    async releaseInvoices(trx: Trx, paymentId: string, invoiceStatus: 'open' | null): Promise<string[]> {
      const held = await trx
        .updateTable('payment_invoices')
        .set({ active: false })
        .where('payment_id', '=', paymentId)
        .where('active', '=', true)
        .returning('invoice_id')
        .execute();
      const ids = held.map((h) => h.invoice_id);
      if (invoiceStatus && ids.length > 0) {
        await trx.updateTable('invoices').set({ status: invoiceStatus, updated_at: new Date() }).where('id', 'in', ids).execute();
      }
      return ids;
    },

    /** Marks the invoices the payment holds as paid; returns their ids. */
    async markInvoicesPaid(trx: Trx, paymentId: string): Promise<string[]> {
      const rows = await trx
        .updateTable('invoices')
        .set({ status: 'paid', updated_at: new Date() })
        .where('id', 'in', (eb) => eb.selectFrom('payment_invoices').select('invoice_id').where('payment_id', '=', paymentId).where('active', '=', true))
        .returning('id')
        .execute();
      return rows.map((r) => r.id);
    },

    async findForPartner(partnerId: string, id: string): Promise<PaymentDetail | null> {
      const row = await db.selectFrom('payments').selectAll().where('id', '=', id).where('partner_id', '=', partnerId).executeTakeFirst();
      return withInvoices(row);
    },

    async findById(id: string, trx: Kysely<Database> = db): Promise<PaymentDetail | null> {
      return withInvoices(await trx.selectFrom('payments').selectAll().where('id', '=', id).executeTakeFirst(), trx);
    },

    /**
     * Claims due pending/submitted payments for this instance: rows locked by another claimer are
     * skipped, and pushing next_check_at forward is the lease that keeps others off them.
     */
    async claimDue(now: Date, leaseUntil: Date, limit: number): Promise<PaymentRow[]> {
      return db.transaction().execute(async (trx) => {
        const due = await trx
          .selectFrom('payments')
          .select('id')
          .where('status', 'in', ['pending', 'submitted'])
          .where('next_check_at', '<=', now)
          .orderBy('next_check_at')
          .limit(limit)
          .forUpdate()
          .skipLocked()
          .execute();
        if (due.length === 0) return [];
        return trx
          .updateTable('payments')
          .set({ next_check_at: leaseUntil, check_attempts: sql`check_attempts + 1` })
          .where('id', 'in', due.map((d) => d.id))
          .returningAll()
          .execute();
      });
    },

    async listForPartner(partnerId: string, page: number, limit: number) {
      const [items, count] = await Promise.all([
        db
          .selectFrom('payments as p')
          .innerJoin('invoices as i', 'i.id', 'p.invoice_id')
          .select(['p.id', 'p.status', 'p.amount', 'p.partner_id', 'p.created_at', 'i.ref_num', 'i.source'])
          .where('p.partner_id', '=', partnerId)
          .orderBy('p.created_at', 'desc')
          .orderBy('p.id', 'desc')
          .limit(limit)
          .offset((page - 1) * limit)
          .execute(),
        db.selectFrom('payments').select(sql<number>`count(*)::int`.as('n')).where('partner_id', '=', partnerId).executeTakeFirstOrThrow(),
      ]);
      return { items, total: Number(count.n) };
    },

    async countByStatus(): Promise<Record<string, number>> {
      const rows = await db.selectFrom('payments').select(['status', sql<number>`count(*)::int`.as('n')]).groupBy('status').execute();
      return Object.fromEntries(rows.map((r) => [r.status, Number(r.n)]));
    },

    /** (source, ref_num) of every invoice this partner has paid through the service. */
    async paidRefsForPartner(partnerId: string): Promise<Set<string>> {
      const rows = await db
        .selectFrom('payment_invoices as pi')
        .innerJoin('payments as p', 'p.id', 'pi.payment_id')
        .innerJoin('invoices as i', 'i.id', 'pi.invoice_id')
        .select(['i.source', 'i.ref_num'])
        .where('p.partner_id', '=', partnerId)
        .where('p.status', 'in', ['submitted', 'confirmed', 'canceled'])
        .execute();
      return new Set(rows.map((r) => `${r.source}\u0000${r.ref_num}`));
    },
  };
}

export type PaymentRepository = ReturnType<typeof createPaymentRepository>;
