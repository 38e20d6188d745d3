import { ConflictError, NotFoundError } from '../domain/errors.js';
import { amountToNumber } from '../domain/money.js';
import { financeDayBounds, isFinanceDay } from '../domain/finance-day.js';
import type { DeliveryStatus, DiscrepancyStatus, AuditAction } from '../domain/vocabulary.js';
import type { PaymentListRow, PaymentSearch, PaymentSearchRepository } from '../db/repositories/payment-search.repository.js';
import type { DeliveryLogRow, WebhookDeliveryRepository } from '../db/repositories/webhook-delivery.repository.js';
import type { DiscrepancyRow, ReconciliationRepository, RunRow } from '../db/repositories/reconciliation.repository.js';
import type { AuditRepository, AuditRow } from '../db/repositories/audit.repository.js';
import type {
  AdminDeliveryView,
  AdminPaymentDetailView,
  AdminPaymentView,
  AuditEntryView,
  DiscrepancyView,
  ReconciliationRunView,
} from '../schemas/back-office.schema.js';
import { systemClock, type Clock } from '../domain/clock.port.js';
import type { UnitOfWork } from '../db/unit-of-work.js';

export interface BackOfficeDeps {
  payments: PaymentSearchRepository;
  deliveries: WebhookDeliveryRepository;
  reconciliations: ReconciliationRepository;
  audit: AuditRepository;
  now?: Clock;
  /** Called when a delivery was queued again: the webhook job sends it now. */
  onRedeliver?: () => void;
}

const PAGE = 50;
const iso = (d: Date | string | null) => (d === null ? null : new Date(d).toISOString());
const num = (amount: string | null) => (amount === null ? null : amountToNumber(amount));

function paymentView(r: PaymentListRow): AdminPaymentView {
  return {
    id: r.id,
    partnerId: r.partner_id,
    invoiceId: r.invoice_id,
    refNum: r.ref_num,
    source: r.source,
    amount: amountToNumber(r.amount),
    status: r.status,
    failureReason: r.failure_reason,
    createdAt: new Date(r.created_at).toISOString(),
    updatedAt: new Date(r.updated_at).toISOString(),
    submittedAt: iso(r.submitted_at),
    paidAt: iso(r.paid_at),
    canceledAt: iso(r.canceled_at),
  };
}

export function runView(r: RunRow): ReconciliationRunView {
  return {
    id: r.id,
    financeDay: r.finance_day,
    status: r.status,
    matched: r.matched,
    autoConfirmed: r.auto_confirmed,
    discrepancies: r.discrepancies,
    operator: r.operator,
    startedAt: new Date(r.started_at).toISOString(),
    finishedAt: iso(r.finished_at),
    sources: r.sources,
  };
}

function discrepancyView(r: DiscrepancyRow): DiscrepancyView {
  return {
    id: r.id,
    kind: r.kind,
    financeDay: r.finance_day,
    source: r.source,
    refNum: r.ref_num,
    paymentId: r.payment_id,
    partnerId: r.partner_id,
    localAmount: num(r.local_amount),
    ministryAmount: num(r.ministry_amount),
    status: r.status,
    createdAt: new Date(r.created_at).toISOString(),
    resolvedAt: iso(r.resolved_at),
    resolvedBy: r.resolved_by,
    note: r.note,
  };
}

function deliveryView(r: DeliveryLogRow): AdminDeliveryView {
  return {
    id: r.id,
    webhookId: r.webhook_id,
    partnerId: r.partner_id,
    url: r.url,
    event: r.event,
    eventId: r.event_id,
    status: r.status,
    attempts: r.attempts,
    lastStatusCode: r.last_status_code,
    lastError: r.last_error,
    nextAttemptAt: new Date(r.next_attempt_at).toISOString(),
    deliveredAt: iso(r.delivered_at),
    createdAt: new Date(r.created_at).toISOString(),
    webhookDisabledReason: r.webhook_disabled_reason,
  };
}

function auditView(r: AuditRow): AuditEntryView {
  return {
    id: String(r.id),
    operator: r.operator,
    action: r.action,
    targetType: r.target_type,
    targetId: r.target_id,
    before: r.before,
    after: r.after,
    createdAt: new Date(r.created_at).toISOString(),
  };
}

/** A search bound: a time as given, or a finance day's start (`from`) or end (`to`). */
function instant(text: string | undefined, side: 'from' | 'to'): Date | undefined {
  if (text === undefined) return undefined;
  return isFinanceDay(text) ? financeDayBounds(text)[side] : new Date(text);
}

/** One page and the cursor of the next: there is a next page only when this one came back full. */
function page<R, V>(rows: R[], view: (r: R) => V, cursorOf: (r: R) => string) {
  const last = rows.at(-1);
  return { items: rows.map(view), nextCursor: rows.length === PAGE && last ? cursorOf(last) : null };
}

/** The operator's reads across partners, and the actions that leave an audit entry. */
export function createBackOfficeService(deps: BackOfficeDeps) {
  const now = deps.now ?? systemClock;

  /** The audit entry of an operator's action, to write in the action's own transaction. */
  function audit(operator: string, action: AuditAction, targetType: string, targetId: string, before: object | null, after: object | null): (uow: UnitOfWork) => Promise<void> {
    const entry = { operator, action, targetType, targetId, before: before as Record<string, unknown> | null, after: after as Record<string, unknown> | null };
    return (uow) => deps.audit.record({ ...entry, at: now() }, uow);
  }

  return {
    audit,

    async searchPayments(filter: Omit<PaymentSearch, 'from' | 'to'> & { from?: string; to?: string }, cursor: string | undefined) {
      const range = { from: instant(filter.from, 'from'), to: instant(filter.to, 'to') };
      return page(await deps.payments.search({ ...filter, ...range }, cursor ?? null, PAGE), paymentView, (r) => r.id);
    },

    async payment(id: string): Promise<AdminPaymentDetailView> {
      const row = await deps.payments.find(id);
      if (!row) throw new NotFoundError('Payment');
      const history = await deps.payments.timeline(id);
      return {
        ...paymentView(row),
        invoiceIds: row.invoiceIds,
        timeline: history.map((h) => ({ at: new Date(h.at).toISOString(), from: h.from_status, to: h.to_status, event: h.event, cause: h.cause, detail: h.detail })),
      };
    },

    async runs(financeDay: string | undefined) {
      return { items: (await deps.reconciliations.listRuns(financeDay, 100)).map(runView) };
    },

    async discrepancies(filter: { status?: DiscrepancyStatus; financeDay?: string }) {
      return { items: (await deps.reconciliations.listDiscrepancies(filter, 500)).map(discrepancyView) };
    },

    async resolveDiscrepancy(id: string, note: string, operator: string): Promise<DiscrepancyView> {
      const resolved = await deps.reconciliations.resolveDiscrepancy(id, { note, operator, at: now() }, (trx, { before, after }) =>
        audit(operator, 'discrepancy.resolve', 'discrepancy', id, discrepancyView(before), discrepancyView(after))(trx),
      );
      if (resolved === 'missing') throw new NotFoundError('Discrepancy');
      if (resolved === 'resolved') throw new ConflictError('Discrepancy is already resolved');
      return discrepancyView(resolved);
    },

    async deliveries(filter: { partnerId?: string; status?: DeliveryStatus }, cursor: string | undefined) {
      return page(await deps.deliveries.listLog(filter, cursor ?? null, PAGE), deliveryView, (r) => r.id);
    },

    async redeliver(id: string, operator: string): Promise<AdminDeliveryView> {
      const queued = await deps.deliveries.redeliver(id, now(), (trx, { before, after }) =>
        audit(operator, 'delivery.redeliver', 'delivery', id, { status: before.status, attempts: before.attempts }, { status: after.status, attempts: after.attempts })(trx),
      );
      if (queued === 'missing') throw new NotFoundError('Delivery');
      if (queued === 'deleted') throw new ConflictError('The webhook of this delivery is deleted');
      deps.onRedeliver?.();
      return deliveryView(queued);
    },

    async auditLog(filter: { operator?: string; action?: string; targetId?: string }, cursor: string | undefined) {
      return page(await deps.audit.list(filter, cursor ?? null, PAGE), auditView, (r) => String(r.id));
    },
  };
}

export type BackOfficeService = ReturnType<typeof createBackOfficeService>;
