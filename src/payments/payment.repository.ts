import { formatTraceparent, type TraceContext } from '../domain/trace-context.js';
import { sql, type Selectable } from 'kysely';
import { compileOnce, type SlotFn } from '../db/compiled-query.js';
import { claimLeased, lanesOf, totalFree, type Leased, type LeasedWorkSpec } from '../db/leased-claim.query.js';
import { isUniqueViolation, type Db } from '../db/database.js';
import type { PaymentsTable } from '../db/db.types.js';
import { executorOf, trxOf, unitOfWorkRunner, type Trx, type UnitOfWork } from '../db/unit-of-work.js';
import { columnList, tableColumns } from '../db/table-columns.js';
import type { Source } from '../domain/vocabulary.js';
import { paymentMove, storedFrom, UNRESOLVED_STATUSES, type PaymentChange, type PaymentTrigger } from './payment.machine.js';
import { invoiceMove, isPayable, type InvoiceEvent } from '../domain/invoice-status.js';
import { isUuid } from '../domain/uuid.js';
import type { OutboxWrite } from '../db/outbox.statements.js';
import type { IdempotencyLease } from '../db/repositories/idempotency.repository.js';
import type { Clock } from '../domain/clock.port.js';

export type PaymentRow = Selectable<PaymentsTable>;

/** A payment row's columns, named by every query that returns whole rows. */
const PAYMENT_COLUMNS = tableColumns<PaymentsTable>()([
  'id', 'partner_id', 'invoice_id', 'amount', 'source', 'status', 'failure_reason', 'submitted_at', 'paid_at', 'canceled_at', 'next_check_at',
  'check_attempts', 'status_event', 'status_cause', 'status_detail', 'user_id', 'qr_text', 'remaining_balance', 'status_check_until', 'status_check_token',
  'status_checked_at', 'expiry_ms', 'trace_parent', 'trace_state', 'partner_reference', 'created_at', 'updated_at',
]);
const paymentColumns = columnList(PAYMENT_COLUMNS);

/** The trace_parent and trace_state values of a payment created under `trace`. */
const traceColumns = (trace: TraceContext | null | undefined) => sql`${trace ? formatTraceparent(trace) : null}, ${trace?.state ?? null}`;

/** A payment claimed for a check, with its invoice's refNum (the ministry is asked by it) and its lease token (its check count). */
export type ClaimedPayment = Leased<PaymentRow & { ref_num: string }>;

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

/** No status check of the payment is under way at `at`: nobody holds its lease, or the lease ran out. */
const statusCheckFree = (at: Date, alias?: string) => {
  const until = sql.ref(alias ? `${alias}.status_check_until` : 'status_check_until');
  return sql`(${until} IS NULL OR ${until} <= ${at}::timestamptz)`;
};

/**
 * Unresolved payments due for a check, in one lane per ministry system with that system's free
 * slots; one a live read is checking is left until it is done. The claim also takes the payment's
 * status-check lease, with no token of its own (the job's token is its check count).
 */
const dueChecks = (free: Partial<Record<string, number>>, at: Date, leaseUntil: Date): LeasedWorkSpec => ({
  table: 'payments',
  key: ['id'],
  dueColumn: 'next_check_at',
  token: { column: 'check_attempts', next: sql`t.check_attempts + 1` },
  pending: sql`status IN (${sql.join(UNRESOLVED_STATUSES)}) AND ${statusCheckFree(at)}`,
  alsoSet: sql`status_check_until = ${leaseUntil}::timestamptz, status_check_token = NULL`,
  laneColumn: 'source',
  lanes: lanesOf(free),
  returning: sql`${columnList(PAYMENT_COLUMNS, 't')}, (SELECT i.ref_num FROM invoices i WHERE i.id = t.invoice_id) AS ref_num`,
});

/** The timeline columns of a status update (copied into payment_history by the triggers). */
function changeColumns(event: PaymentTrigger, why: PaymentChange) {
  return { status_event: event, status_cause: why.cause, status_detail: why.detail ? JSON.stringify(why.detail) : null };
}

const changeSql = (event: PaymentTrigger, why: PaymentChange) => {
  const c = changeColumns(event, why);
  return sql`status_event = ${c.status_event}, status_cause = ${c.status_cause}, status_detail = ${c.status_detail}::jsonb`;
};

/**
 * submitted -> confirmed for a part-payment, with the outbox event, in one statement: the payment
 * records the balance it leaves by our books, its invoice stays open owing that, and it lets go of
 * every invoice it held (the linked ones are settled only with the whole balance), so the next
 * payment can take them. Null when another actor moved the payment first.
 */
async function markPartConfirmed(db: Db, input: { id: string; at: Date; paidAt: Date; outbox: OutboxWrite; why: PaymentChange }): Promise<string[] | null> {
  const move = paymentMove('ministry_approved');
  // The invoice is locked first and the balance left is what it owes now less this payment: a
  // reversal committed since the caller read the books has raised it.
  const { rows } = await sql<{ moved: boolean; ids: string[] }>`
    WITH books AS (
      SELECT i.amount - p.amount AS rest
      FROM payments p JOIN invoices i ON i.id = p.invoice_id
      WHERE p.id = ${input.id}::uuid
      FOR NO KEY UPDATE OF i
    ), moved AS (
      UPDATE payments SET status = ${move.to}, ${changeSql(move.event, input.why)}, updated_at = ${input.at}::timestamptz, paid_at = ${input.paidAt}::timestamptz,
        next_check_at = NULL, remaining_balance = (SELECT rest FROM books)
      WHERE id = ${input.id}::uuid AND status IN (${sql.join(move.from)})
      RETURNING ${paymentColumns}
    ), released AS (
      UPDATE payment_invoices pi SET active = false FROM moved WHERE pi.payment_id = moved.id AND pi.active
      RETURNING pi.invoice_id
    ), rebalanced AS (
      UPDATE invoices SET amount = moved.remaining_balance, updated_at = ${input.at}::timestamptz
      FROM moved WHERE invoices.id = moved.invoice_id
    ), ${input.outbox.ctes('moved')}
    SELECT EXISTS (SELECT 1 FROM moved) AS moved, coalesce((SELECT array_agg(invoice_id) FROM released), '{}') AS ids`.execute(db);
  const row = rows[0];
  return row?.moved ? row.ids : null;
}

/**
 * Locks the confirmed payment that settled a canceled part-payment's invoice since (it holds the
 * invoice), before owedAgain changes the invoice: every path locks payments before invoices.
 */
async function lockSettlerOf(trx: Trx, paymentId: string): Promise<void> {
  await sql`
    SELECT w.id FROM payments p
    JOIN payment_invoices pi ON pi.invoice_id = p.invoice_id AND pi.active AND pi.payment_id <> p.id
    JOIN payments w ON w.id = pi.payment_id AND w.status = 'confirmed'
    WHERE p.id = ${paymentId}::uuid AND p.remaining_balance IS NOT NULL
    ORDER BY w.id
    FOR UPDATE OF w`.execute(trx);
}

/**
 * A canceled part-payment's amount is owed again on its invoice, exactly, as the ministry's
 * reversal makes it: added to the balance of an open invoice (a payment holding it keeps the
 * hold and meets the raised balance when it is confirmed), or, when a later payment had cleared
 * the invoice, the invoice is open again owing this amount and that payment becomes a part-payment
 * leaving it owed: it lets go of the invoice (not of the linked ones it settled, which stay paid).
 * The ids of the invoices it changed.
 */
async function owedAgain(trx: Trx, paymentId: string, at: Date): Promise<string[]> {
  const reopen = invoiceMove('payment_canceled');
  const { rows } = await sql<{ id: string }>`
    WITH part AS (
      SELECT p.id, p.invoice_id, p.amount FROM payments p WHERE p.id = ${paymentId}::uuid AND p.remaining_balance IS NOT NULL
    ), reopened AS (
      UPDATE invoices i SET
        amount = CASE WHEN i.status = 'open' THEN i.amount + part.amount ELSE part.amount END,
        status = ${reopen.to}, updated_at = ${at}::timestamptz
      FROM part WHERE i.id = part.invoice_id AND i.status IN ('open', ${sql.join(reopen.from)})
      RETURNING i.id, i.amount
    ), unsettled AS (
      UPDATE payments w SET remaining_balance = reopened.amount, updated_at = ${at}::timestamptz
      FROM reopened, payment_invoices pi, part
      WHERE pi.invoice_id = reopened.id AND pi.active AND pi.payment_id = w.id AND w.id <> part.id AND w.status = 'confirmed'
      RETURNING w.id, reopened.id AS invoice_id
    ), released AS (
      UPDATE payment_invoices pi SET active = false FROM unsettled u WHERE pi.payment_id = u.id AND pi.invoice_id = u.invoice_id
    )
    SELECT id FROM reopened`.execute(trx);
  return rows.map((r) => r.id);
}

/** A new pending payment, as insertPending writes it. */
export interface PendingPayment {
  id: string;
  partnerId: string;
  invoiceId: string;
  source: Source;
  amount: string;
  nextCheckAt: Date;
  lease?: IdempotencyLease;
  userId?: string;
  /** The partner's own reference (X-Partner-Reference). */
  partnerReference?: string;
  qrText: string;
  /** The creating request's span context, continued by the payment's background work. */
  trace?: TraceContext | null;
}

/** A new payment, holding its invoice. */
function paymentInserts(db: Db) {
  return {
    /**
     * Inserts a pending payment holding its invoice, with the QR payload it keeps for life, and ties
     * it to the caller's idempotency key, in one statement: the partial unique index refuses a
     * second holder and nothing is written. Under a key the insert presents the key's lease token,
     * so a request that stalled past its lease cannot add a second payment beside the one made by
     * the request that took the key over.
     * `invoice_held` when another payment holds the invoice; `lease_lost` when the key is no longer the caller's.
     */
    async insertPending(input: PendingPayment): Promise<PaymentRow | 'invoice_held' | 'lease_lost'> {
      const { lease } = input;
      // Under a key, the payment is inserted only while the key's row, locked here, still carries the caller's token.
      const leaseCte = lease
        ? sql`lease AS (
            SELECT 1 FROM idempotency_keys
            WHERE partner_id = ${lease.partnerId}::uuid AND key = ${lease.key} AND lease_token = ${lease.token}::uuid AND state = 'in_progress'
            FOR UPDATE
          ), `
        : sql``;
      const inserted = sql<PaymentRow>`
        WITH ${leaseCte}p AS (
          INSERT INTO payments (id, partner_id, invoice_id, source, amount, status, next_check_at, user_id, qr_text, expiry_ms, trace_parent, trace_state, partner_reference)
          SELECT ${input.id}::uuid, ${input.partnerId}::uuid, ${input.invoiceId}::uuid, ${input.source}, ${input.amount}::numeric, 'pending', ${input.nextCheckAt}::timestamptz, ${input.userId ?? null}, ${input.qrText},
            (SELECT s.payment_expiry_ms FROM sandbox_invoices s WHERE s.invoice_id = ${input.invoiceId}::uuid), ${traceColumns(input.trace)}, ${input.partnerReference ?? null}
          WHERE ${lease ? sql`EXISTS (SELECT 1 FROM lease)` : sql`true`}
          RETURNING ${paymentColumns}
        ), held AS (
          INSERT INTO payment_invoices (payment_id, invoice_id, position, active)
          SELECT id, invoice_id, 0, true FROM p
        )${lease === undefined ? sql`` : sql`, attached AS (
          UPDATE idempotency_keys k SET payment_id = p.id FROM p
          WHERE k.partner_id = ${lease.partnerId}::uuid AND k.key = ${lease.key} AND k.lease_token = ${lease.token}::uuid
        )`}
        SELECT ${paymentColumns} FROM p`;
      try {
        const row = (await inserted.execute(db)).rows[0];
        if (row) return row;
        if (lease) return 'lease_lost';
        throw new Error('payment insert returned no row');
      } catch (err) {
        if (isUniqueViolation(err)) return 'invoice_held';
        throw err;
      }
    },

    /**
     * The request that took an idempotency key over, about to submit the key's pending payment
     * again: pushes the payment's first check out to `until` so the confirmation job leaves the
     * submit to it, presenting the key's lease token. `lease_lost` when the key is no longer the
     * caller's (nothing written); `not_pending` when another actor has moved the payment already.
     */
    async holdPendingForKey(paymentId: string, lease: IdempotencyLease, until: Date): Promise<'held' | 'not_pending' | 'lease_lost'> {
      const { rows } = await sql<{ held: boolean; deferred: boolean }>`
        WITH k AS (
          SELECT 1 FROM idempotency_keys
          WHERE partner_id = ${lease.partnerId}::uuid AND key = ${lease.key} AND lease_token = ${lease.token}::uuid AND state = 'in_progress' AND payment_id = ${paymentId}::uuid
          FOR UPDATE
        ), d AS (
          UPDATE payments SET next_check_at = GREATEST(next_check_at, ${until}::timestamptz)
          WHERE id = ${paymentId}::uuid AND status = 'pending' AND EXISTS (SELECT 1 FROM k)
          RETURNING id
        )
        SELECT EXISTS (SELECT 1 FROM k) AS held, EXISTS (SELECT 1 FROM d) AS deferred`.execute(db);
      const row = rows[0];
      if (!row?.held) return 'lease_lost';
      return row.deferred ? 'held' : 'not_pending';
    },
  };
}

/** The ministry's answers that move a payment in one statement, with its outbox event. */
function ministryAnswers(db: Db) {
  return {
    /**
     * pending -> submitted for a payment that settles its own invoice only, with the outbox event,
     * in one statement. Null when another actor moved the payment first.
     */
    async markSubmitted(input: { id: string; at: Date; nextCheckAt: Date; outbox: OutboxWrite; why: PaymentChange }): Promise<PaymentDetail | null> {
      const move = paymentMove('ministry_accepted');
      const { rows } = await sql<PaymentRow>`
        WITH moved AS (
          UPDATE payments SET status = ${move.to}, ${changeSql(move.event, input.why)}, updated_at = ${input.at}::timestamptz, submitted_at = ${input.at}::timestamptz,
            next_check_at = ${input.nextCheckAt}::timestamptz
          WHERE id = ${input.id}::uuid AND status IN (${sql.join(move.from)})
          RETURNING ${paymentColumns}
        ), ${input.outbox.ctes('moved')}
        SELECT ${paymentColumns} FROM moved`.execute(db);
      const row = rows[0];
      return row ? { ...row, invoiceIds: [row.invoice_id] } : null;
    },

    /**
     * submitted -> confirmed, the invoices it holds marked paid and the outbox event, in one
     * statement (one round trip where a transaction took five: the confirmation job's hot path).
     * The invoices' update reads `moved`, so it runs after the payment row is locked, in the lock
     * order of every other path. Null when another actor moved the payment first; else the ids of
     * the invoices it changed. With `remaining` (the ministry still shows a balance: see
     * markPartConfirmed) it paid only part.
     */
    async markConfirmed(input: { id: string; at: Date; paidAt: Date; outbox: OutboxWrite; why: PaymentChange; remaining?: string | null }): Promise<string[] | null> {
      if (input.remaining) return markPartConfirmed(db, input);
      const confirmed = await markWholeConfirmed(db, input, false);
      return Array.isArray(confirmed) ? confirmed : null;
    },

    /**
     * markConfirmed for a payment that, by our books, leaves nothing owing on its invoice, judged
     * in the same statement: the common confirmation in one round trip. When the books leave a
     * balance nothing moves, and the answer is what they leave owing (the billed amount less the
     * invoice's other confirmed part-payments and this one): the caller weighs it against the
     * ministry's view and confirms with the balance.
     */
    async markConfirmedIfSettled(input: { id: string; at: Date; paidAt: Date; outbox: OutboxWrite; why: PaymentChange }): Promise<string[] | { owed: string } | null> {
      return markWholeConfirmed(db, input, true);
    },
  };
}

/**
 * submitted -> confirmed for the whole balance (see markConfirmed); with `checkBooks`, only when
 * the payment leaves its invoice owing nothing by our books: it pays at least the balance the
 * invoice owes now (the billed amount less what confirmed payments took, since every reversal
 * gives back what it took). Otherwise `{ owed }`; another actor may have moved the payment
 * meanwhile, which the caller's confirmation with the balance then finds.
 */
async function markWholeConfirmed(
  db: Db,
  input: { id: string; at: Date; paidAt: Date; outbox: OutboxWrite; why: PaymentChange },
  checkBooks: boolean,
): Promise<string[] | { owed: string } | null> {
  const move = paymentMove('ministry_approved');
  const paid = invoiceMove('payment_confirmed');
  // The invoice is locked and read as it is now, not as the statement's snapshot had it: a reversal
  // committed meanwhile has raised what it owes, and this payment must meet that balance.
  const books = checkBooks
    ? sql`SELECT b.owed <= 0 AS settles, b.owed FROM (
        SELECT i.amount - p.amount AS owed
        FROM payments p JOIN invoices i ON i.id = p.invoice_id
        WHERE p.id = ${input.id}::uuid
        FOR NO KEY UPDATE OF i
      ) b`
    : sql`SELECT true AS settles, NULL::numeric AS owed`;
  const { rows } = await sql<{ moved: boolean; settles: boolean | null; owed: string | null; ids: string[] }>`
    WITH books AS (${books}), moved AS (
      UPDATE payments SET status = ${move.to}, ${changeSql(move.event, input.why)}, updated_at = ${input.at}::timestamptz, paid_at = ${input.paidAt}::timestamptz, next_check_at = NULL
      WHERE id = ${input.id}::uuid AND status IN (${sql.join(move.from)}) AND (SELECT settles FROM books)
      RETURNING ${paymentColumns}
    ), paid AS (
      UPDATE invoices SET status = ${paid.to}, updated_at = ${input.at}::timestamptz
      WHERE id IN (SELECT pi.invoice_id FROM payment_invoices pi JOIN moved ON pi.payment_id = moved.id WHERE pi.active)
        AND status IN (${sql.join(paid.from)})
      RETURNING id
    ), ${input.outbox.ctes('moved')}
    SELECT EXISTS (SELECT 1 FROM moved) AS moved, (SELECT settles FROM books) AS settles, (SELECT owed FROM books) AS owed,
      coalesce((SELECT array_agg(id) FROM paid), '{}') AS ids`.execute(db);
  const row = rows[0];
  if (row?.moved) return row.ids;
  return row?.settles === false && row.owed !== null ? { owed: row.owed } : null;
}

/** The caller's unit of work over payments, and the locks a move takes in it. */
function paymentLocks(db: Db) {
  return {
    transaction: unitOfWorkRunner(db),

    /** Locks the payment for a move by `event` (an intent's too); false when it is not in a state the event leaves from. */
    async lockFor(uow: UnitOfWork, id: string, event: PaymentTrigger): Promise<boolean> {
      const row = await trxOf(uow).selectFrom('payments').select('id').where('id', '=', id).where('status', 'in', storedFrom(event)).forUpdate().executeTakeFirst();
      return row !== undefined;
    },

    /**
     * Takes the linked invoices the ministry settles together with the payment's own, all or none,
     * in the caller's transaction. The invoice rows are locked first so a concurrent confirmation of
     * the same invoices waits for this one. `taken` when another payment holds one of them
     * or one is already paid; then nothing is held.
     */
    async holdLinked(uow: UnitOfWork, paymentId: string, linkedInvoiceIds: string[]): Promise<'held' | 'taken'> {
      if (linkedInvoiceIds.length === 0) return 'held';
      const trx = trxOf(uow);
      // NO KEY UPDATE: it waits for a confirmation marking these invoices paid, but not for a new
      // payment's foreign-key check on them (KEY SHARE), which would deadlock against our insert
      // waiting on that payment's hold.
      const invoices = await trx.selectFrom('invoices').select(['id', 'status']).where('id', 'in', linkedInvoiceIds).orderBy('id').forNoKeyUpdate().execute();
      if (invoices.length !== linkedInvoiceIds.length || invoices.some((i) => !isPayable(i.status))) return 'taken';
      const values = linkedInvoiceIds.map((invoiceId, i) => ({ payment_id: paymentId, invoice_id: invoiceId, position: i + 1, active: true }));
      const inserted = await trx.insertInto('payment_invoices').values(values).onConflict((oc) => oc.doNothing()).returning('invoice_id').execute();
      return inserted.length === linkedInvoiceIds.length ? 'held' : 'taken';
    },
  };
}

/** Moves by the transition table and the release of invoices, in the caller's unit of work. */
function paymentMoves(now: Clock) {
  return {
    /**
     * Moves a payment by `event` if it is in one of the states the transition table allows the
     * event from (compare-and-set); null when it is not, e.g. another actor moved it first.
     */
    async move(
      uow: UnitOfWork,
      id: string,
      event: PaymentTrigger,
      at: Date,
      why: PaymentChange,
      extra: { failureReason?: string; paidAt?: Date; canceledAt?: Date; nextCheckAt?: Date | null } = {},
    ): Promise<PaymentRow | null> {
      const { from, to } = paymentMove(event);
      const row = await trxOf(uow)
        .updateTable('payments')
        .set({
          status: to,
          ...changeColumns(event, why),
          updated_at: at,
          ...(to === 'submitted' ? { submitted_at: at } : {}),
          ...(UNRESOLVED_STATUSES.includes(to) ? {} : { next_check_at: null }),
          ...(extra.failureReason !== undefined ? { failure_reason: extra.failureReason } : {}),
          ...(extra.paidAt !== undefined ? { paid_at: extra.paidAt } : {}),
          ...(extra.canceledAt !== undefined ? { canceled_at: extra.canceledAt } : {}),
          ...(extra.nextCheckAt !== undefined ? { next_check_at: extra.nextCheckAt } : {}),
        })
        .where('id', '=', id)
        .where('status', 'in', from)
        .returning(PAYMENT_COLUMNS)
        .executeTakeFirst();
      return row ?? null;
    },

    /**
     * Ends the payment's hold on its invoices; with an invoice event, the released invoices move
     * by it (from the states the invoice table allows), and a canceled part-payment is owed again
     * (owedAgain), in the caller's transaction: a reversal gives back exactly what it took.
     * Returns the ids of the invoices it released or changed.
     */
    async releaseInvoices(uow: UnitOfWork, paymentId: string, invoiceEvent: InvoiceEvent | null): Promise<string[]> {
      const trx = trxOf(uow);
      if (invoiceEvent === 'payment_canceled') await lockSettlerOf(trx, paymentId);
      const held = await trx
        .updateTable('payment_invoices')
        .set({ active: false })
        .where('payment_id', '=', paymentId)
        .where('active', '=', true)
        .returning('invoice_id')
        .execute();
      const ids = held.map((h) => h.invoice_id);
      if (invoiceEvent && ids.length > 0) {
        const { from, to } = invoiceMove(invoiceEvent);
        await trx.updateTable('invoices').set({ status: to, updated_at: now() }).where('id', 'in', ids).where('status', 'in', from).execute();
      }
      if (invoiceEvent === 'payment_canceled') return [...ids, ...(await owedAgain(trx, paymentId, now()))];
      return ids;
    },
  };
}

/**
 * The reads of payments, by partners and by the reports. `reads` serves the partner's reports
 * (the day's list, the settlement's own payments): the replica's routed reads, or the database itself.
 */
function paymentReads(db: Db, reads: Db) {
  // The status read's statements, compiled once: `GET /payments/{id}` runs one per request.
  const selectDetail = () => db.selectFrom('payments').select(PAYMENT_COLUMNS).select(invoiceIdsColumn);
  const detailForPartner = compileOnce((slot: SlotFn<'id' | 'partnerId'>) =>
    selectDetail().where('id', '=', slot<string>('id')).where('partner_id', '=', slot<string>('partnerId')),
  );
  const detailById = compileOnce((slot: SlotFn<'id'>) => selectDetail().where('id', '=', slot<string>('id')));

  return {
    async findForPartner(partnerId: string, id: string): Promise<PaymentDetail | null> {
      const { rows } = await db.executeQuery(detailForPartner({ id, partnerId }));
      return rows[0] ?? null;
    },

    async findById(id: string, uow?: UnitOfWork): Promise<PaymentDetail | null> {
      const { rows } = await executorOf(db, uow).executeQuery(detailById({ id }));
      return rows[0] ?? null;
    },

    /**
     * The partner's payments created before `before`, newest first, from the `skip`-th on. The
     * caller seeks `before` to a day boundary first (see ReportRepository.paymentPosition), so
     * `skip` never exceeds one day's payments however long the history. A day's payments grow
     * with the channel, so the skipped ones are stepped over in the (partner, created_at, id)
     * index alone, and only the page's own rows are read and joined to their invoices: skipping
     * joined rows cost an invoice lookup each (10 ms for 1,200 of them at 5M invoices).
     */
    async listForPartnerBefore(partnerId: string, before: Date, skip: number, limit: number) {
      const page = reads
        .selectFrom('payments')
        .select('id')
        .where('partner_id', '=', partnerId)
        .where('created_at', '<', before)
        .orderBy('created_at', 'desc')
        .orderBy('id', 'desc')
        .offset(skip)
        .limit(limit);
      return reads
        .selectFrom(page.as('page'))
        .innerJoin('payments as p', 'p.id', 'page.id')
        .innerJoin('invoices as i', 'i.id', 'p.invoice_id')
        .select(['p.id', 'p.status', 'p.amount', 'p.partner_id', 'p.created_at', 'i.ref_num', 'p.source', 'p.partner_reference'])
        .orderBy('p.created_at', 'desc')
        .orderBy('p.id', 'desc')
        .execute();
    },

    /**
     * Which of these payment ids (as the ministry's settlement names them) are this partner's own
     * and still stand: a canceled or failed payment claims no settlement entry. Each with the
     * partner's own reference of it (null when none came).
     */
    async ownSettledIds(partnerId: string, paymentIds: string[]): Promise<Map<string, string | null>> {
      // A ministry may name payment ids that are not ours at all; only UUIDs can be compared.
      const ids = paymentIds.filter(isUuid);
      if (ids.length === 0) return new Map();
      const rows = await reads
        .selectFrom('payments')
        .select(['id', 'partner_reference'])
        .where('partner_id', '=', partnerId)
        // One array parameter: a busy day's settlement names more payments than a query may have parameters.
        .where('id', '=', sql<string>`ANY(${ids}::uuid[])`)
        .where('status', 'in', ['submitted', 'confirmed'])
        .execute();
      return new Map(rows.map((r) => [r.id, r.partner_reference]));
    },
  };
}

/** The confirmation job's claims of payments due for a check. */
function paymentChecks(db: Db, now: Clock) {
  return {
    /**
     * Claims due unresolved payments for this instance, at most `limits[source]` of each ministry
     * system (its free check slots); check_attempts counts the checks.
     */
    async claimDue(now: Date, leaseUntil: Date, limits: Partial<Record<string, number>>): Promise<ClaimedPayment[]> {
      return claimLeased(db, dueChecks(limits, now, leaseUntil), { now, leaseUntil, batch: totalFree(limits) });
    },

    /**
     * The next check of a payment still unresolved after one; a resolved payment is left alone.
     * Fenced by the claim's lease token (its check count): a later claim (this one's lease ran
     * out, another instance took it) has counted on, so a late reschedule changes nothing. False then.
     * Ends the status check: its lease is let go unless a live read has taken it since (it has a
     * token), and a read within the live interval answers from this check.
     */
    async reschedule(id: string, nextCheckAt: Date, leaseToken: number): Promise<boolean> {
      const row = await db
        .updateTable('payments')
        .set({
          next_check_at: nextCheckAt,
          status_checked_at: now(),
          status_check_until: sql<Date | null>`CASE WHEN status_check_token IS NULL THEN NULL ELSE status_check_until END`,
        })
        .where('id', '=', id)
        .where('status', 'in', UNRESOLVED_STATUSES)
        .where('check_attempts', '=', leaseToken)
        .returning('id')
        .executeTakeFirst();
      return row !== undefined;
    },
  };
}

/** A payment whose status a live read holds the lease of, with its invoice's refNum (the ministry is asked by it). */
export type StatusCheckClaim = Leased<PaymentRow & { ref_num: string }, string>;

/** A partner's live read asking the ministry for one payment's status, under the payment's status-check lease. */
function liveStatusChecks(db: Db) {
  return {
    /**
     * Takes the status-check lease of an unresolved payment for a live read, until `leaseUntil`,
     * under the caller's new `token`: only when no check of it (the job's or another read's, on
     * any instance) is under way at `at` and none ended after `checkedBefore`. Null otherwise.
     */
    async claimStatusCheck(input: { id: string; at: Date; leaseUntil: Date; checkedBefore: Date; token: string }): Promise<StatusCheckClaim | null> {
      const { rows } = await sql<StatusCheckClaim>`
        UPDATE payments p SET status_check_until = ${input.leaseUntil}::timestamptz, status_check_token = ${input.token}::uuid
        WHERE p.id = ${input.id}::uuid AND p.status IN (${sql.join(UNRESOLVED_STATUSES)}) AND ${statusCheckFree(input.at, 'p')}
          AND (p.status_checked_at IS NULL OR p.status_checked_at <= ${input.checkedBefore}::timestamptz)
        RETURNING ${columnList(PAYMENT_COLUMNS, 'p')}, (SELECT i.ref_num FROM invoices i WHERE i.id = p.invoice_id) AS ref_num,
          p.status_check_token AS lease_token`.execute(db);
      return rows[0] ?? null;
    },

    /**
     * Ends a live read's status check at `at`, presenting its token: false when it no longer
     * holds the lease (it ran out and the job or another read took it), and then changes nothing.
     */
    async releaseStatusCheck(id: string, token: string, at: Date): Promise<boolean> {
      const row = await db
        .updateTable('payments')
        .set({ status_check_until: null, status_check_token: null, status_checked_at: at })
        .where('id', '=', id)
        .where('status_check_token', '=', token)
        .returning('id')
        .executeTakeFirst();
      return row !== undefined;
    },

    /**
     * The ministry's status of the payment changed by the service's own doing (the sandbox's
     * approve). A check under way asked before the change, so its lease is taken from it: a live
     * read's token is cleared and the job's check count moves on, and its late answer records
     * nothing (its write is reported as a stale lease's). The next read asks again rather than
     * answer from the check before the change. The job's schedule is left as it is: a job check
     * under way when a read comes makes the read answer the stored status.
     */
    async reopenStatusCheck(id: string): Promise<void> {
      await db
        .updateTable('payments')
        .set({
          status_checked_at: null,
          status_check_until: null,
          status_check_token: null,
          check_attempts: sql<number>`check_attempts + 1`,
        })
        .where('id', '=', id)
        .where('status', 'in', UNRESOLVED_STATUSES)
        .execute();
    },
  };
}

export function createPaymentRepository(db: Db, now: Clock, reads: Db = db) {
  return {
    ...paymentInserts(db),
    ...ministryAnswers(db),
    ...paymentLocks(db),
    ...paymentMoves(now),
    ...paymentReads(db, reads),
    ...paymentChecks(db, now),
    ...liveStatusChecks(db),
  };
}

export type PaymentRepository = ReturnType<typeof createPaymentRepository>;
