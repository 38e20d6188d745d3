import { CaseAlreadyOpenError, ConflictError, InvalidRequestError, NotFoundError } from '../domain/errors.js';
import { caseDueAt, caseMove } from '../domain/case-status.js';
import { financeDayOf } from '../domain/finance-day.js';
import { maskRegister } from '../domain/register-mask.js';
import { decodeScopedCursor, encodeScopedCursor } from '../domain/page-cursor.js';
import type { MinistryAdapters } from '../domain/ministry.port.js';
import type { Clock } from '../domain/clock.port.js';
import type { Logger } from '../domain/logger.port.js';
import type { AuditAction, CaseType, StaleLeaseReport, WebhookEvent } from '../domain/vocabulary.js';
import type { AuditRepository } from '../db/repositories/audit.repository.js';
import type { PaymentSearchRepository } from '../db/repositories/payment-search.repository.js';
import type { ReconciliationRepository } from '../db/repositories/reconciliation.repository.js';
import type { AlsoOnCase, CaseEventOf, CasePayment, CaseRecord, CaseRepository, EvidenceClaim } from '../db/repositories/case.repository.js';
import type { CasePayments, PaymentResolver } from '../payments/payments.module.js';
import { CURSOR_VIOLATION } from '../schemas/cursor.schema.js';
import type { AdminCaseFilter, AdminCaseView, CaseDetailView, CaseEvidence, CaseList, CaseListFilter, CaseView, OpenCaseInput, ResolveCaseInput } from '../schemas/case.schema.js';
import { adminCaseView, caseAuditView, caseDetailView, caseView } from './case.view.js';
import { timelineEntryView } from './back-office.view.js';
import { discrepancyView } from './reconciliation.view.js';

export interface CaseServiceDeps {
  cases: CaseRepository;
  payments: CasePayments;
  resolver: PaymentResolver;
  ministries: MinistryAdapters;
  timelines: Pick<PaymentSearchRepository, 'timeline'>;
  discrepancies: Pick<ReconciliationRepository, 'listDiscrepancies'>;
  audit: AuditRepository;
  turnaroundHours: Readonly<Record<CaseType, number>>;
  /** How long a pass holds a case while it gathers the evidence (its ministry calls, each bounded by their timeout). */
  evidenceLeaseMs: number;
  log: Logger;
  now: Clock;
  /** A case opened: its evidence can be gathered now. */
  onOpened?: () => void;
  /** A case's change queued its event: its webhook can go out now. */
  onChanged?: () => void;
  /** A case passed its due time unresolved. */
  onEscalated?: (type: CaseType) => void;
  onStaleLease?: StaleLeaseReport;
}

const DEFAULT_LIMIT = 20;
const CURSOR_VERSION = 'c1';
const POSITION = /^([1-9][0-9]{0,17})$/;
/** Cases whose evidence one pass gathers, and cases it escalates. */
const EVIDENCE_BATCH = 20;
const ESCALATE_BATCH = 100;
/** Settlement lines one case keeps: a payment has one, an invoice paid in parts a few. */
const MAX_SETTLEMENT_LINES = 20;

const eventOf =
  (event: Extract<WebhookEvent, `case.${string}`>): CaseEventOf =>
  (record) => ({ event, data: caseDetailView(record) });

const reason = (err: unknown) => (err instanceof Error ? err.message : String(err));

/** The evidence's parts, each gathered on its own: one the ministry could not give says why, the others still come. */
async function gatherEvidence(deps: CaseServiceDeps, payment: CasePayment): Promise<CaseEvidence> {
  const adapter = deps.ministries[payment.source];
  const at = payment.paidAt ?? payment.submittedAt;
  const financeDay = at ? financeDayOf(at) : null;
  const [status, invoice, settlement, timeline, discrepancies] = await Promise.allSettled([
    adapter.getPayment({ paymentId: payment.id, refNum: payment.refNum }),
    adapter.getByRef(payment.refNum),
    financeDay ? adapter.settlement(financeDay) : Promise.resolve([]),
    deps.timelines.timeline(payment.id),
    deps.discrepancies.listDiscrepancies({ paymentId: payment.id }, 50),
  ]);
  const found = invoice.status === 'fulfilled' ? invoice.value : null;
  const lines =
    settlement.status === 'fulfilled'
      ? settlement.value
          .filter((e) => e.paymentId === payment.id || e.refNum === payment.refNum)
          .slice(0, MAX_SETTLEMENT_LINES)
          .map((e) => ({ paymentId: e.paymentId, refNum: e.refNum, amount: e.amount, date: e.date }))
      : [];
  return {
    gatheredAt: deps.now().toISOString(),
    payment: { status: payment.status, amount: payment.amount, source: payment.source, refNum: payment.refNum, financeDay },
    timeline: timeline.status === 'fulfilled' ? timeline.value.map(timelineEntryView) : [],
    ministryStatus:
      status.status === 'fulfilled'
        ? { status: status.value.status, confirmedAt: status.value.confirmedAt, error: null }
        : { status: null, confirmedAt: null, error: reason(status.reason) },
    ministryInvoice:
      invoice.status === 'fulfilled'
        ? { found: found !== null, status: found?.status ?? null, amount: found?.amount ?? null, payerRegister: found?.payer ? maskRegister(found.payer.register) : null, error: null }
        : { found: false, status: null, amount: null, payerRegister: null, error: reason(invoice.reason) },
    settlement: { financeDay, lines, error: settlement.status === 'rejected' ? reason(settlement.reason) : null },
    discrepancies: discrepancies.status === 'fulfilled' ? discrepancies.value.map(discrepancyView) : [],
  };
}

/**
 * Cases a bank raises about its own payments, the operator's queue of them, and the background
 * work that gathers each new case's evidence and escalates the ones past due.
 */
export function createCaseService(deps: CaseServiceDeps) {
  const { cases, now } = deps;

  async function partnerNamed(records: CaseRecord[]): Promise<AdminCaseView[]> {
    const names = await cases.partnerNames(records.map((r) => r.row.partner_id));
    const at = now();
    return records.map((r) => adminCaseView(r, names.get(r.row.partner_id) ?? '', at));
  }

  /** The operator's audit entry of a change; `said` is what the operator wrote (a comment, a resolution's note), kept with it. */
  const audited =
    (operator: string, action: AuditAction, said: Record<string, unknown> = {}): AlsoOnCase =>
    (uow, { before, after }) =>
      deps.audit.record({ operator, action, targetType: 'case', targetId: before.id, before: caseAuditView(before), after: { ...caseAuditView(after.row), ...said }, at: now() }, uow);

  /**
   * A paid_not_updated case whose fresh answer says the ministry confirmed the payment: the payment
   * is confirmed through its machine if our books still wait for it, and the case is answered.
   */
  async function answerIfConfirmed(claim: EvidenceClaim, evidence: CaseEvidence): Promise<void> {
    const answer = evidence.ministryStatus;
    if (claim.type !== 'paid_not_updated' || answer.status !== 'confirmed') return;
    let payment = await deps.payments.findById(claim.paymentId);
    if (!payment) return;
    const why = { cause: 'case' as const, detail: { ministry: 'confirmed', confirmedAt: answer.confirmedAt, caseId: claim.id } };
    if (payment.status === 'submitted') {
      const paidAt = answer.confirmedAt ? new Date(answer.confirmedAt) : now();
      await deps.resolver.confirm(payment, evidence.payment.refNum, Number.isNaN(paidAt.getTime()) ? now() : paidAt, why);
    } else if (payment.status === 'pending') {
      await deps.resolver.check(payment, { refNum: evidence.payment.refNum, cause: 'case' });
    }
    payment = await deps.payments.findById(claim.paymentId);
    if (payment?.status !== 'confirmed') return;
    const when = answer.confirmedAt ? ` (confirmed at ${answer.confirmedAt})` : '';
    const resolved = await cases.resolve(
      claim.id,
      {
        outcome: 'confirmed',
        note: `The ministry confirms the payment${when}; the invoice is paid there, and its own view follows.`,
        ministryReference: null,
        by: 'service',
        operator: null,
        at: now(),
        move: caseMove('answered'),
      },
      eventOf('case.resolved'),
    );
    if (resolved && resolved !== 'resolved') deps.log.info({ caseId: claim.id, paymentId: claim.paymentId }, 'case answered by the fresh check: the ministry confirms the payment');
  }

  async function gatherOne(claim: EvidenceClaim): Promise<void> {
    const payment = await cases.payment(claim.paymentId);
    if (!payment) return;
    const evidence = await gatherEvidence(deps, payment);
    if (!(await cases.saveEvidence(claim, evidence, now()))) {
      deps.onStaleLease?.('case_evidence', claim.id);
      return;
    }
    await answerIfConfirmed(claim, evidence);
  }

  return {
    async open(partnerId: string, input: OpenCaseInput): Promise<CaseView> {
      const payment = await deps.payments.findForPartner(partnerId, input.paymentId);
      if (!payment) throw new NotFoundError('Payment');
      const at = now();
      const opened = await cases.open(
        { partnerId, paymentId: payment.id, type: input.type, description: input.description, at, dueAt: caseDueAt(input.type, at, deps.turnaroundHours) },
        eventOf('case.opened'),
      );
      if ('openId' in opened) throw new CaseAlreadyOpenError(opened.openId);
      deps.onChanged?.();
      deps.onOpened?.();
      return caseView(opened.row);
    },

    async get(partnerId: string, id: string): Promise<CaseDetailView> {
      const found = await cases.findForPartner(partnerId, id);
      if (!found) throw new NotFoundError('Case');
      return caseDetailView(found);
    },

    async list(partnerId: string, query: CaseListFilter): Promise<CaseList> {
      const match = query.cursor === undefined ? null : decodeScopedCursor(CURSOR_VERSION, [partnerId], query.cursor, POSITION);
      if (query.cursor !== undefined && !match?.[1]) throw new InvalidRequestError([CURSOR_VIOLATION], '/cursor');
      const limit = query.limit ?? DEFAULT_LIMIT;
      // One row more than the page tells whether another page follows.
      const rows = await cases.listForPartner(partnerId, { status: query.status, paymentId: query.paymentId }, match?.[1] ?? null, limit + 1);
      const page = rows.slice(0, limit);
      const last = page.at(-1);
      return { items: page.map(caseView), nextCursor: rows.length > limit && last ? encodeScopedCursor(CURSOR_VERSION, [partnerId], String(last.position)) : null };
    },

    async comment(partnerId: string, id: string, text: string): Promise<CaseDetailView> {
      const done = await cases.comment(id, { author: 'partner', operator: null, text, at: now(), partnerId }, eventOf('case.updated'));
      if (done === null) throw new NotFoundError('Case');
      if (done === 'resolved') throw new ConflictError('The case is resolved; open a new one');
      deps.onChanged?.();
      return caseDetailView(done);
    },

    // The operator's side.

    async queue(filter: AdminCaseFilter): Promise<{ items: AdminCaseView[] }> {
      return { items: await partnerNamed(await cases.listQueue(filter, filter.limit ?? 100)) };
    },

    async show(id: string): Promise<AdminCaseView> {
      const found = await cases.find(id);
      if (!found) throw new NotFoundError('Case');
      return (await partnerNamed([found]))[0] as AdminCaseView;
    },

    async take(id: string, operator: string): Promise<AdminCaseView> {
      const done = await cases.take(id, { operator, at: now(), move: caseMove('taken') }, eventOf('case.updated'), audited(operator, 'case.take'));
      if (done === null) throw new NotFoundError('Case');
      if (done === 'resolved') throw new ConflictError('The case is already resolved');
      deps.onChanged?.();
      return (await partnerNamed([done.after]))[0] as AdminCaseView;
    },

    async operatorComment(id: string, operator: string, text: string): Promise<AdminCaseView> {
      const done = await cases.comment(id, { author: 'operator', operator, text, at: now() }, eventOf('case.updated'), audited(operator, 'case.comment', { comment: text }));
      if (done === null) throw new NotFoundError('Case');
      if (done === 'resolved') throw new ConflictError('The case is already resolved');
      deps.onChanged?.();
      return (await partnerNamed([done]))[0] as AdminCaseView;
    },

    async resolve(id: string, operator: string, input: ResolveCaseInput): Promise<AdminCaseView> {
      const done = await cases.resolve(
        id,
        { outcome: input.outcome, note: input.note, ministryReference: input.ministryReference ?? null, by: 'operator', operator, at: now(), move: caseMove('answered') },
        eventOf('case.resolved'),
        audited(operator, 'case.resolve', { note: input.note }),
      );
      if (done === null) throw new NotFoundError('Case');
      if (done === 'resolved') throw new ConflictError('The case is already resolved');
      deps.onChanged?.();
      return (await partnerNamed([done.after]))[0] as AdminCaseView;
    },

    // The background work (jobs/case.job.ts).

    /** Gathers the evidence of up to a batch of new cases, each under its lease; a paid_not_updated one the ministry confirms is answered. */
    async gatherPending(): Promise<number> {
      const at = now();
      const claims = await cases.claimEvidence(at, new Date(at.getTime() + deps.evidenceLeaseMs), EVIDENCE_BATCH);
      const results = await Promise.allSettled(claims.map(gatherOne));
      results.forEach((r, i) => {
        if (r.status === 'rejected') deps.log.warn({ err: r.reason, caseId: claims[i]?.id }, 'case evidence not gathered; the next pass tries again once its lease ends');
      });
      if (claims.length > 0) deps.onChanged?.();
      return claims.length;
    },

    /** Escalates up to a batch of unresolved cases past their due time. */
    async escalateDue(): Promise<number> {
      const rows = await cases.escalateDue(now(), caseMove('due_passed'), ESCALATE_BATCH, eventOf('case.updated'));
      for (const row of rows) {
        deps.onEscalated?.(row.type);
        deps.log.warn({ caseId: row.id, type: row.type, dueAt: row.due_at.toISOString() }, 'case escalated: its due time passed unresolved');
      }
      if (rows.length > 0) deps.onChanged?.();
      return rows.length;
    },
  };
}

export type CaseService = ReturnType<typeof createCaseService>;
