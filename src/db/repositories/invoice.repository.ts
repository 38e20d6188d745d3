import { sql, type Selectable } from 'kysely';
import { compileOnce, type SlotFn } from '../compiled-query.js';
import type { Db } from '../database.js';
import type { InvoicesTable } from '../db.types.js';
import { executorOf, type UnitOfWork } from '../unit-of-work.js';
import { qualified, tableColumns } from '../table-columns.js';
import type { InvoiceFilter, UpstreamInvoice } from '../../domain/ministry.port.js';
import type { Source, StoredInvoiceStatus } from '../../domain/vocabulary.js';
import type { Clock } from '../../domain/clock.port.js';

export type InvoiceRow = Selectable<InvoicesTable>;

/** An invoice row's columns, named by every query that returns whole rows. */
const INVOICE_COLUMNS = tableColumns<InvoicesTable>()([
  'id', 'source', 'ref_num', 'description', 'amount', 'billed_amount', 'status', 'due_date', 'issued_at', 'vehicle_no', 'tax_ref',
  'payer_register', 'payer_name', 'payee_id', 'payee_name', 'year', 'created_at', 'updated_at',
]);

const FILTER_COLUMN = { ttd: 'payer_register', vehicle: 'vehicle_no', taxRef: 'tax_ref' } as const;

function toValues(inv: UpstreamInvoice) {
  return {
    source: inv.source,
    ref_num: inv.refNum,
    description: inv.description,
    amount: inv.amount,
    billed_amount: inv.amount,
    status: inv.status,
    due_date: inv.dueDate,
    issued_at: inv.issuedAt,
    vehicle_no: inv.vehicleNo,
    tax_ref: inv.taxRef,
    payer_register: inv.payer?.register ?? null,
    payer_name: inv.payer?.name ?? null,
    payee_id: inv.payee.id,
    payee_name: inv.payee.name,
    year: inv.year === null ? null : JSON.stringify(inv.year),
  };
}

/**
 * A payment of ours was confirmed on the invoice (its own or a linked one), even if reversed since:
 * from then on its books are ours, each of our payments and reversals moving its balance by
 * exactly its amount, and a ministry view (which may lag behind any of them) changes them no more.
 */
const BOOKS_OURS = sql<boolean>`EXISTS (SELECT 1 FROM payment_invoices pi JOIN payments p ON p.id = pi.payment_id
  WHERE pi.invoice_id = invoices.id AND p.paid_at IS NOT NULL)`;

/** Inserts or refreshes ministry invoices; (source, ref_num) keeps each one's UUID stable. */
async function upsert(db: Db, invoices: UpstreamInvoice[], at: Date): Promise<InvoiceRow[]> {
  if (invoices.length === 0) return [];
  const rows = await db
    .insertInto('invoices')
    .values(invoices.map(toValues))
    .onConflict((oc) =>
      oc.columns(['source', 'ref_num']).doUpdateSet((eb) => ({
        description: eb.ref('excluded.description'),
        // A view lagging behind a confirmation of ours would raise the balance, one lagging behind a
        // reversal of ours would lower it: once the books are ours neither is taken. A balance the
        // ministry lowered on its own (paid at a bank) then shows here as more than it asks, which
        // it refuses to take, rather than as less, which would be marked paid while still owed.
        amount: sql<string>`CASE WHEN ${BOOKS_OURS} THEN invoices.amount ELSE excluded.amount END`,
        // Fixed from the first payment of ours on: what a view shows after it is no bill.
        billed_amount: sql<string>`CASE WHEN ${BOOKS_OURS} OR EXISTS (
          SELECT 1 FROM payments p WHERE p.invoice_id = invoices.id AND p.status IN ('pending', 'submitted', 'confirmed')
        ) THEN invoices.billed_amount ELSE excluded.amount END`,
        // While a payment holds the invoice, its status is the payment's to change (the transition
        // tables), not the ministry copy's: a copy read mid-payment must not pay or reopen it. Once
        // the books are ours, only the ministry's withdrawal of the bill (canceled) is taken.
        status: sql<StoredInvoiceStatus>`CASE WHEN EXISTS (
          SELECT 1 FROM payment_invoices pi WHERE pi.invoice_id = invoices.id AND pi.active
        ) THEN invoices.status WHEN excluded.status <> 'canceled' AND ${BOOKS_OURS} THEN invoices.status ELSE excluded.status END`,
        due_date: eb.ref('excluded.due_date'),
        issued_at: eb.ref('excluded.issued_at'),
        vehicle_no: eb.ref('excluded.vehicle_no'),
        tax_ref: eb.ref('excluded.tax_ref'),
        payer_register: eb.ref('excluded.payer_register'),
        payer_name: eb.ref('excluded.payer_name'),
        payee_id: eb.ref('excluded.payee_id'),
        payee_name: eb.ref('excluded.payee_name'),
        year: eb.ref('excluded.year'),
        updated_at: at,
      })),
    )
    .returning(INVOICE_COLUMNS)
    .execute();
  const byKey = new Map(rows.map((r) => [`${r.source}\u0000${r.ref_num}`, r]));
  return invoices.map((inv) => byKey.get(`${inv.source}\u0000${inv.refNum}`)).filter((r): r is InvoiceRow => r !== undefined);
}

export function createInvoiceRepository(db: Db, now: Clock) {
  // Compiled once: every POST /payments and every cache miss of GET /invoices/{id} runs it.
  const selectForPartner = compileOnce((slot: SlotFn<'partnerId' | 'id'>) =>
    db
      .selectFrom('invoices as i')
      .innerJoin('partner_invoices as pi', 'pi.invoice_id', 'i.id')
      .select(qualified('i', INVOICE_COLUMNS))
      .where('pi.partner_id', '=', slot<string>('partnerId'))
      .where('i.id', '=', slot<string>('id')),
  );

  return {
    upsert: (invoices: UpstreamInvoice[], uow?: UnitOfWork) => upsert(executorOf(db, uow), dedupe(invoices), now()),

    /** Grants the partner access to the invoices it has just been shown. */
    async recordAccess(partnerId: string, invoices: readonly { id: string }[], uow?: UnitOfWork): Promise<void> {
      if (invoices.length === 0) return;
      const invoiceIds = invoices.map((i) => i.id);
      await executorOf(db, uow)
        .insertInto('partner_invoices')
        .values([...new Set(invoiceIds)].map((invoice_id) => ({ partner_id: partnerId, invoice_id })))
        .onConflict((oc) => oc.columns(['partner_id', 'invoice_id']).doUpdateSet({ last_seen_at: now() }))
        .execute();
    },

    /** The stored invoice, only if this partner has retrieved it before (payer data is personal). */
    async findForPartner(partnerId: string, id: string): Promise<InvoiceRow | null> {
      const { rows } = await db.executeQuery(selectForPartner({ partnerId, id }));
      return rows[0] ?? null;
    },

    async findById(id: string, uow?: UnitOfWork): Promise<InvoiceRow | null> {
      return (await executorOf(db, uow).selectFrom('invoices').select(INVOICE_COLUMNS).where('id', '=', id).executeTakeFirst()) ?? null;
    },

    async findByRefs(refs: { source: Source; refNum: string }[], uow?: UnitOfWork): Promise<InvoiceRow[]> {
      if (refs.length === 0) return [];
      return executorOf(db, uow)
        .selectFrom('invoices')
        .select(INVOICE_COLUMNS)
        .where((eb) => eb.or(refs.map((r) => eb.and([eb('source', '=', r.source), eb('ref_num', '=', r.refNum)]))))
        .execute();
    },

    /** Stored copies matching a search filter, for sources that could not answer live. */
    async findStored(filter: InvoiceFilter, sources: Source[]): Promise<InvoiceRow[]> {
      if (sources.length === 0) return [];
      return db
        .selectFrom('invoices')
        .select(INVOICE_COLUMNS)
        .where(FILTER_COLUMN[filter.kind], '=', filter.value)
        .where('source', 'in', sources)
        .orderBy('issued_at')
        .orderBy('ref_num')
        .execute();
    },

    // Sandbox invoices and the partner each belongs to (empty outside the sandbox).

    /**
     * Marks invoices as planted by this partner at the simulated ministry (sandbox only), so no other
     * partner is shown them; `paymentExpiryMs` bounds how long their payments wait for approval.
     */
    async markPlanted(partnerId: string, invoices: readonly { id: string }[], paymentExpiryMs: number | null, uow?: UnitOfWork): Promise<void> {
      if (invoices.length === 0) return;
      await executorOf(db, uow)
        .insertInto('sandbox_invoices')
        .values(invoices.map((i) => ({ invoice_id: i.id, partner_id: partnerId, payment_expiry_ms: paymentExpiryMs })))
        .onConflict((oc) => oc.column('invoice_id').doNothing())
        .execute();
    },

    /** Which of these invoices another partner planted in the sandbox: never shown to this one. */
    async plantedByOthers(partnerId: string, invoiceIds: readonly string[]): Promise<Set<string>> {
      if (invoiceIds.length === 0) return new Set();
      const rows = await db
        .selectFrom('sandbox_invoices')
        .select('invoice_id')
        .where('invoice_id', '=', sql<string>`ANY(${[...new Set(invoiceIds)]}::uuid[])`)
        .where('partner_id', '<>', partnerId)
        .execute();
      return new Set(rows.map((r) => r.invoice_id));
    },
  };
}

function dedupe(invoices: UpstreamInvoice[]): UpstreamInvoice[] {
  const seen = new Map<string, UpstreamInvoice>();
  for (const inv of invoices) seen.set(`${inv.source}\u0000${inv.refNum}`, inv);
  // A fixed order keeps concurrent upserts of overlapping sets from deadlocking in PostgreSQL.
  return [...seen.values()].sort((a, b) => (a.source + a.refNum < b.source + b.refNum ? -1 : 1));
}

export type InvoiceRepository = ReturnType<typeof createInvoiceRepository>;
