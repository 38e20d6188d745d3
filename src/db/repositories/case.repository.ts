import { randomUUID } from 'node:crypto';
import { sql, type Selectable } from 'kysely';
import type { Db } from '../database.js';
import type { CaseCommentsTable, CasesTable } from '../db.types.js';
import { trxOf, unitOfWorkRunner, type AlsoInTransaction, type Trx, type UnitOfWork } from '../unit-of-work.js';
import type { Outbox, PaymentEvent } from '../outbox.statements.js';
import type { CaseMove } from '../../domain/case-status.js';
import { UNRESOLVED_CASE_STATUSES, type CaseAuthor, type CaseOutcome, type CaseResolver, type CaseStatus, type CaseType, type PaymentStatus, type Source } from '../../domain/vocabulary.js';

export type CaseRow = Selectable<CasesTable>;
export type CaseCommentRow = Selectable<CaseCommentsTable>;

/** A case and its comments, oldest first: what every view and every case event is made from. */
export interface CaseRecord {
  row: CaseRow;
  comments: CaseCommentRow[];
}

/** The event a change of a case writes, made from the case as the change leaves it. */
export type CaseEventOf = (record: CaseRecord) => PaymentEvent;

/** A change of a case as its audit entry records it: the row before, the case after. */
export interface CaseChange {
  before: CaseRow;
  after: CaseRecord;
}

/** What else a change commits with (the operator's audit entry). */
export type AlsoOnCase = AlsoInTransaction<CaseChange>;

const nothingElse: AlsoOnCase = async () => undefined;

export interface NewCase {
  partnerId: string;
  paymentId: string;
  type: CaseType;
  description: string;
  at: Date;
  dueAt: Date;
}

export interface CaseResolution {
  outcome: CaseOutcome;
  note: string;
  ministryReference: string | null;
  by: CaseResolver;
  operator: string | null;
}

/** A claim of a case's evidence: the case, and the token its write presents. */
export interface EvidenceClaim {
  id: string;
  token: string;
  paymentId: string;
  type: CaseType;
}

/** What the evidence starts from: the payment as the books hold it, with its invoice's reference. */
export interface CasePayment {
  id: string;
  status: PaymentStatus;
  amount: string;
  source: Source;
  refNum: string;
  createdAt: Date;
  submittedAt: Date | null;
  paidAt: Date | null;
}

export interface CaseCounts {
  type: CaseType;
  status: CaseStatus;
  count: number;
  overdue: number;
  oldestAt: Date | null;
}

export interface QueueFilter {
  status?: CaseStatus | 'unresolved';
  type?: CaseType;
  partnerId?: string;
}

const UNRESOLVED = [...UNRESOLVED_CASE_STATUSES];

async function commentsOf(trx: Trx | Db, caseIds: string[]): Promise<Map<string, CaseCommentRow[]>> {
  const byCase = new Map<string, CaseCommentRow[]>(caseIds.map((id) => [id, []]));
  if (caseIds.length === 0) return byCase;
  const rows = await trx.selectFrom('case_comments').selectAll().where('case_id', 'in', caseIds).orderBy('id').execute();
  for (const c of rows) byCase.get(c.case_id)?.push(c);
  return byCase;
}

async function recordOf(trx: Trx | Db, row: CaseRow): Promise<CaseRecord> {
  return { row, comments: (await commentsOf(trx, [row.id])).get(row.id) ?? [] };
}

/**
 * Cases and their comments. Every change of a case writes its event (through the outbox) in the
 * same transaction, so the bank hears of each change exactly when it commits; every move is a
 * compare-and-set on the status the move may leave from (src/domain/case-status.ts).
 */
/** `reads`: where the operator's queue is listed from (the replica's routed reads, or the database itself). */
export function createCaseRepository(db: Db, outbox: Outbox, reads: Db = db) {
  const inUnitOfWork = unitOfWorkRunner(db);
  const append = (uow: UnitOfWork, record: CaseRecord, eventOf: CaseEventOf) => outbox.append(uow, record.row.partner_id, eventOf(record));

  return {
    /**
     * The new case and its event; `{ openId }` when the payment already has an unresolved case of
     * this type (the partial unique index decides, so two concurrent opens make one case).
     */
    async open(input: NewCase, eventOf: CaseEventOf): Promise<CaseRecord | { openId: string }> {
      return inUnitOfWork(async (uow) => {
        const trx = trxOf(uow);
        const row = await trx
          .insertInto('cases')
          .values({
            id: randomUUID(),
            partner_id: input.partnerId,
            payment_id: input.paymentId,
            type: input.type,
            status: 'open',
            description: input.description,
            created_at: input.at,
            updated_at: input.at,
            due_at: input.dueAt,
          })
          // The index's predicate as a literal: with a parameter there, a prepared statement's
          // generic plan cannot infer the partial index and the insert fails from its sixth run.
          .onConflict((oc) => oc.columns(['payment_id', 'type']).where(sql<boolean>`status <> 'resolved'`).doNothing())
          .returningAll()
          .executeTakeFirst();
        if (!row) {
          const open = await trx.selectFrom('cases').select('id').where('payment_id', '=', input.paymentId).where('type', '=', input.type).where('status', 'in', UNRESOLVED).executeTakeFirst();
          if (!open) throw new Error('a conflicting case was resolved meanwhile');
          return { openId: open.id };
        }
        const record: CaseRecord = { row, comments: [] };
        await append(uow, record, eventOf);
        return record;
      });
    },

    async find(id: string): Promise<CaseRecord | null> {
      const row = await db.selectFrom('cases').selectAll().where('id', '=', id).executeTakeFirst();
      return row ? recordOf(db, row) : null;
    },

    async findForPartner(partnerId: string, id: string): Promise<CaseRecord | null> {
      const row = await db.selectFrom('cases').selectAll().where('id', '=', id).where('partner_id', '=', partnerId).executeTakeFirst();
      return row ? recordOf(db, row) : null;
    },

    /** Newest first, before position `before` when given; at most `limit` rows. */
    async listForPartner(partnerId: string, filter: { status?: CaseStatus; paymentId?: string }, before: string | null, limit: number): Promise<CaseRow[]> {
      let q = db.selectFrom('cases').selectAll().where('partner_id', '=', partnerId).orderBy('position', 'desc').limit(limit);
      if (filter.status) q = q.where('status', '=', filter.status);
      if (filter.paymentId) q = q.where('payment_id', '=', filter.paymentId);
      if (before !== null) q = q.where('position', '<', before);
      return q.execute();
    },

    /** The operator's queue: unresolved cases by due time (the overdue first), resolved ones newest first. */
    async listQueue(filter: QueueFilter, limit: number): Promise<CaseRecord[]> {
      let q = reads.selectFrom('cases').selectAll().limit(limit);
      const status = filter.status ?? 'unresolved';
      q = status === 'unresolved' ? q.where('status', 'in', UNRESOLVED) : q.where('status', '=', status);
      q = status === 'resolved' ? q.orderBy('resolved_at', 'desc').orderBy('id', 'desc') : q.orderBy('due_at').orderBy('id');
      if (filter.type) q = q.where('type', '=', filter.type);
      if (filter.partnerId) q = q.where('partner_id', '=', filter.partnerId);
      const rows = await q.execute();
      const comments = await commentsOf(reads, rows.map((r) => r.id));
      return rows.map((row) => ({ row, comments: comments.get(row.id) ?? [] }));
    },

    /**
     * A comment, the case's `updated_at`, and the event, in one transaction; null when the case is
     * not found (for this partner, when one is given), 'resolved' when it is already answered.
     */
    async comment(
      id: string,
      input: { author: CaseAuthor; operator: string | null; text: string; at: Date; partnerId?: string },
      eventOf: CaseEventOf,
      also: AlsoOnCase = nothingElse,
    ): Promise<CaseRecord | 'resolved' | null> {
      return inUnitOfWork(async (uow) => {
        const trx = trxOf(uow);
        let q = trx.selectFrom('cases').selectAll().where('id', '=', id).forUpdate();
        if (input.partnerId) q = q.where('partner_id', '=', input.partnerId);
        const locked = await q.executeTakeFirst();
        if (!locked) return null;
        if (locked.status === 'resolved') return 'resolved';
        await trx.insertInto('case_comments').values({ case_id: id, author: input.author, operator: input.operator, text: input.text, created_at: input.at }).execute();
        const row = await trx.updateTable('cases').set({ updated_at: input.at }).where('id', '=', id).returningAll().executeTakeFirstOrThrow();
        const record = await recordOf(trx, row);
        await append(uow, record, eventOf);
        await also(uow, { before: locked, after: record });
        return record;
      });
    },

    /**
     * An operator takes the case: open -> in_progress (`taken`), or, escalated or already in
     * progress, a new owner without a move. Null when not found, 'resolved' when answered.
     */
    async take(id: string, input: { operator: string; at: Date; move: CaseMove }, eventOf: CaseEventOf, also: AlsoOnCase = nothingElse): Promise<CaseChange | 'resolved' | null> {
      return inUnitOfWork(async (uow) => {
        const trx = trxOf(uow);
        const before = await trx.selectFrom('cases').selectAll().where('id', '=', id).forUpdate().executeTakeFirst();
        if (!before) return null;
        if (before.status === 'resolved') return 'resolved';
        const status = input.move.from.includes(before.status) ? input.move.to : before.status;
        const row = await trx.updateTable('cases').set({ status, assignee: input.operator, updated_at: input.at }).where('id', '=', id).returningAll().executeTakeFirstOrThrow();
        const after = await recordOf(trx, row);
        await append(uow, after, eventOf);
        await also(uow, { before, after });
        return { before, after };
      });
    },

    /**
     * `answered` with its resolution and the event, when the case is still in a status the move
     * leaves from; null when not found, 'resolved' when it was answered first.
     */
    async resolve(id: string, input: CaseResolution & { at: Date; move: CaseMove }, eventOf: CaseEventOf, also: AlsoOnCase = nothingElse): Promise<CaseChange | 'resolved' | null> {
      return inUnitOfWork(async (uow) => {
        const trx = trxOf(uow);
        const before = await trx.selectFrom('cases').selectAll().where('id', '=', id).forUpdate().executeTakeFirst();
        if (!before) return null;
        if (!input.move.from.includes(before.status)) return 'resolved';
        const row = await trx
          .updateTable('cases')
          .set({
            status: input.move.to,
            outcome: input.outcome,
            resolution_note: input.note,
            ministry_reference: input.ministryReference,
            resolved_by: input.by,
            resolved_operator: input.operator,
            resolved_at: input.at,
            updated_at: input.at,
          })
          .where('id', '=', id)
          .returningAll()
          .executeTakeFirstOrThrow();
        const after = await recordOf(trx, row);
        await append(uow, after, eventOf);
        await also(uow, { before, after });
        return { before, after };
      });
    },

    /**
     * `due_passed` for at most `limit` unresolved cases whose due time is past, each with its event,
     * in one transaction; rows another instance holds are skipped, so passes on several instances
     * escalate each case once.
     */
    async escalateDue(at: Date, move: CaseMove, limit: number, eventOf: CaseEventOf): Promise<CaseRow[]> {
      return inUnitOfWork(async (uow) => {
        const trx = trxOf(uow);
        const { rows } = await sql<CaseRow>`
          UPDATE cases SET status = ${move.to}, escalated_at = ${at}::timestamptz, updated_at = ${at}::timestamptz
          WHERE id IN (
            SELECT id FROM cases WHERE status = ANY(${move.from}::text[]) AND due_at <= ${at}::timestamptz
            ORDER BY due_at LIMIT ${limit} FOR UPDATE SKIP LOCKED
          )
          RETURNING *`.execute(trx);
        const comments = await commentsOf(trx, rows.map((r) => r.id));
        for (const row of rows) await append(uow, { row, comments: comments.get(row.id) ?? [] }, eventOf);
        return rows;
      });
    },

    /** Cases whose evidence is still to gather and not held by another pass, oldest first, each under a new lease. */
    async claimEvidence(at: Date, leaseUntil: Date, limit: number): Promise<EvidenceClaim[]> {
      const { rows } = await sql<{ id: string; evidence_token: string; payment_id: string; type: CaseType }>`
        UPDATE cases SET evidence_token = gen_random_uuid(), evidence_lease_until = ${leaseUntil}::timestamptz
        WHERE id IN (
          SELECT id FROM cases WHERE evidence_at IS NULL AND (evidence_lease_until IS NULL OR evidence_lease_until <= ${at}::timestamptz)
          ORDER BY created_at LIMIT ${limit} FOR UPDATE SKIP LOCKED
        )
        RETURNING id, evidence_token, payment_id, type`.execute(db);
      return rows.map((r) => ({ id: r.id, token: r.evidence_token, paymentId: r.payment_id, type: r.type }));
    },

    /** The gathered evidence, fenced by the claim's token: false when the lease was lost (another pass has the case). */
    async saveEvidence(claim: EvidenceClaim, evidence: Record<string, unknown>, at: Date): Promise<boolean> {
      const result = await db
        .updateTable('cases')
        .set({ evidence: JSON.stringify(evidence), evidence_at: at, evidence_lease_until: null })
        .where('id', '=', claim.id)
        .where('evidence_token', '=', claim.token)
        .executeTakeFirst();
      return result.numUpdatedRows > 0n;
    },

    /** The names of these partners, for the operator's views. */
    async partnerNames(ids: string[]): Promise<Map<string, string>> {
      if (ids.length === 0) return new Map();
      const rows = await db.selectFrom('partners').select(['id', 'name']).where('id', 'in', [...new Set(ids)]).execute();
      return new Map(rows.map((r) => [r.id, r.name]));
    },

    /** The payment a case is about, with its invoice's reference. */
    async payment(paymentId: string): Promise<CasePayment | null> {
      const row = await db
        .selectFrom('payments as p')
        .innerJoin('invoices as i', 'i.id', 'p.invoice_id')
        .select(['p.id', 'p.status', 'p.amount', 'p.source', 'i.ref_num', 'p.created_at', 'p.submitted_at', 'p.paid_at'])
        .where('p.id', '=', paymentId)
        .executeTakeFirst();
      return row
        ? { id: row.id, status: row.status, amount: row.amount, source: row.source, refNum: row.ref_num, createdAt: row.created_at, submittedAt: row.submitted_at, paidAt: row.paid_at }
        : null;
    },

    /**
     * Unresolved cases by type and status: how many, how many past due, and the oldest's opening
     * time. Reads the unresolved cases only (a partial index), whatever the number answered.
     */
    async unresolvedCounts(at: Date): Promise<CaseCounts[]> {
      const { rows } = await sql<{ type: CaseType; status: CaseStatus; count: string; overdue: string; oldest_at: Date | null }>`
        SELECT type, status, count(*)::text AS count, count(*) FILTER (WHERE due_at <= ${at}::timestamptz)::text AS overdue, min(created_at) AS oldest_at
        FROM cases WHERE status <> 'resolved' GROUP BY type, status`.execute(db);
      return rows.map((r) => ({ type: r.type, status: r.status, count: Number(r.count), overdue: Number(r.overdue), oldestAt: r.oldest_at }));
    },
  };
}

export type CaseRepository = ReturnType<typeof createCaseRepository>;
