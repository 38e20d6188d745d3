import { sql, type Kysely, type Selectable, type Transaction } from 'kysely';
import { compileOnce, type SlotFn } from '../compiled-query.js';
import type { Db } from '../database.js';
import type { Database, PaymentsTable, PaymentStatus } from '../db.types.js';
import type { OutboxWrite } from './event.repository.js';

export type PaymentRow = Selectable<PaymentsTable>;
type Trx = Transaction<Database>;

export interface PaymentDetail extends PaymentRow {
  invoiceIds: string[];
}

/**
 * The payment's invoice ids in settlement order, read in the same statement as the payment and
 * named as `PaymentDetail` names them, so a row is a detail as it comes.
 */
const invoiceIdsColumn = sql<string[]>`(
  SELECT coalesce(jsonb_agg(pi.invoice_id ORDER BY pi.position), '[]'::jsonb)
  FROM payment_invoices pi WHERE pi.payment_id = payments.id
)`.as('invoiceIds');

export function createPaymentRepository(db: Db) {
  // The status read's statements, compiled once: `GET /payments/{id}` runs one per request.
  const selectDetail = () => db.selectFrom('payments').selectAll().select(invoiceIdsColumn);
  const detailForPartner = compileOnce((slot: SlotFn<'id' | 'partnerId'>) =>
    selectDetail().where('id', '=', slot<string>('id')).where('partner_id', '=', slot<string>('partnerId')),
  );
  const detailById = compileOnce((slot: SlotFn<'id'>) => selectDetail().where('id', '=', slot<string>('id')));

  return {
    transaction: <T>(fn: (trx: Trx) => Promise<T>) => db.transaction().execute(fn),

    /**
     * Inserts a pending payment holding its invoice, and ties it to the caller's idempotency key,
     * in one statement: the partial unique index refuses a second holder and nothing is written.
     */
    async insertPending(input: { partnerId: string; invoiceId: string; amount: string; nextCheckAt: Date; idempotencyKey?: string }): Promise<PaymentRow> {
      const { rows } = await sql<PaymentRow>`
        WITH p AS (
          INSERT INTO payments (partner_id, invoice_id, amount, status, next_check_at)
          VALUES (${input.partnerId}::uuid, ${input.invoiceId}::uuid, ${input.amount}::numeric, 'pending', ${input.nextCheckAt}::timestamptz)
          RETURNING *
        ), held AS (
          INSERT INTO payment_invoices (payment_id, invoice_id, position, active)
          SELECT id, invoice_id, 0, true FROM p
        )${input.idempotencyKey === undefined ? sql`` : sql`, attached AS (
          UPDATE idempotency_keys SET payment_id = (SELECT id FROM p)
          WHERE partner_id = ${input.partnerId}::uuid AND key = ${input.idempotencyKey}
        )`}
        SELECT * FROM p`.execute(db);
      const row = rows[0];
      if (!row) throw new Error('payment insert returned no row');
      return row;
    },

    /**
     * pending -> submitted, with the linked invoices the ministry settles together (one already held
     * by another payment is skipped) and the outbox event, in one statement. Null when another actor
     * moved the payment first.
     */
    async markSubmitted(input: { id: string; nextCheckAt: Date; linkedInvoiceIds: string[]; outbox: OutboxWrite }): Promise<PaymentDetail | null> {
      const linked = input.linkedInvoiceIds.map((invoiceId, i) => sql`(${invoiceId}::uuid, ${i + 1}::int)`);
      const { rows } = await sql<PaymentRow & { linked_ids: string[] }>`
        WITH moved AS (
          UPDATE payments SET status = 'submitted', updated_at = ${new Date()}::timestamptz, next_check_at = ${input.nextCheckAt}::timestamptz
          WHERE id = ${input.id}::uuid AND status = 'pending'
          RETURNING *
        ), linked AS (
          ${linked.length === 0 ? sql`SELECT NULL::uuid AS invoice_id, 0 AS position WHERE false` : sql`
          INSERT INTO payment_invoices (payment_id, invoice_id, position, active)
          SELECT moved.id, l.invoice_id, l.position, true FROM moved, (VALUES ${sql.join(linked)}) AS l(invoice_id, position)
          ON CONFLICT DO NOTHING
          RETURNING invoice_id, position`}
        ), ${input.outbox.ctes('moved')}
        SELECT moved.*, (SELECT coalesce(jsonb_agg(invoice_id ORDER BY position), '[]'::jsonb) FROM linked) AS linked_ids
        FROM moved`.execute(db);
      const row = rows[0];
      if (!row) return null;
      const { linked_ids: linkedIds, ...payment } = row;
      return { ...payment, invoiceIds: [payment.invoice_id, ...linkedIds] };
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
      const { rows } = await db.executeQuery(detailForPartner({ id, partnerId }));
      return rows[0] ?? null;
    },

    async findById(id: string, trx: Kysely<Database> = db): Promise<PaymentDetail | null> {
      const { rows } = await trx.executeQuery(detailById({ id }));
      return rows[0] ?? null;
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
