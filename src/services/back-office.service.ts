import { ConflictError, NotFoundError } from '../domain/errors.js';
import { financeDayBounds, isFinanceDay } from '../domain/finance-day.js';
import type { DeliveryStatus, DiscrepancyStatus, AuditAction } from '../domain/vocabulary.js';
import type { PaymentSearch, PaymentSearchRepository } from '../db/repositories/payment-search.repository.js';
import type { WebhookDeliveryRepository } from '../db/repositories/webhook-delivery.repository.js';
import type { PushDeliveryRepository } from '../db/repositories/push-delivery.repository.js';
import type { ReconciliationRepository } from '../db/repositories/reconciliation.repository.js';
import type { AuditRepository } from '../db/repositories/audit.repository.js';
import type { AdminDeliveryView, AdminPaymentDetailView, DiscrepancyView, PushCountsView } from '../schemas/back-office.schema.js';
import { auditView, deliveryProgress, deliveryView, paymentView, timelineEntryView } from './back-office.view.js';
import { discrepancyView, runView } from './reconciliation.view.js';
import type { Clock } from '../domain/clock.port.js';
import type { UnitOfWork } from '../db/unit-of-work.js';

export { runView } from './reconciliation.view.js';

export interface BackOfficeDeps {
  payments: PaymentSearchRepository;
  deliveries: WebhookDeliveryRepository;
  pushes: Pick<PushDeliveryRepository, 'countByStatus'>;
  reconciliations: ReconciliationRepository;
  audit: AuditRepository;
  now: Clock;
  /** Called when a delivery was queued again: the webhook job sends it now. */
  onRedeliver?: () => void;
}

const PAGE = 50;

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
  const { now } = deps;

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
      return { ...paymentView(row), invoiceIds: row.invoiceIds, timeline: history.map(timelineEntryView) };
    },

    async runs(financeDay: string | undefined) {
      return { items: (await deps.reconciliations.listRuns(financeDay, 100)).map(runView) };
    },

    async discrepancies(filter: { status?: DiscrepancyStatus; financeDay?: string }) {
      return { items: (await deps.reconciliations.listDiscrepancies(filter, 500)).map(discrepancyView) };
    },

    async resolveDiscrepancy(id: string, note: string, operator: string): Promise<DiscrepancyView> {
      const resolved = await deps.reconciliations.resolveDiscrepancy(id, { note, operator, at: now() }, (uow, { before, after }) =>
        audit(operator, 'discrepancy.resolve', 'discrepancy', id, discrepancyView(before), discrepancyView(after))(uow),
      );
      if (resolved === 'missing') throw new NotFoundError('Discrepancy');
      if (resolved === 'resolved') throw new ConflictError('Discrepancy is already resolved');
      return discrepancyView(resolved);
    },

    async deliveries(filter: { partnerId?: string; status?: DeliveryStatus }, cursor: string | undefined) {
      return page(await deps.deliveries.listLog(filter, cursor ?? null, PAGE), deliveryView, (r) => r.id);
    },

    /** Pushes by status (`skipped`: no FCM credentials, nothing sent), of one partner or all. */
    async pushCounts(partnerId: string | undefined): Promise<PushCountsView> {
      return deps.pushes.countByStatus(partnerId);
    },

    async redeliver(id: string, operator: string): Promise<AdminDeliveryView> {
      const queued = await deps.deliveries.redeliver(id, now(), (uow, { before, after }) =>
        audit(operator, 'delivery.redeliver', 'delivery', id, deliveryProgress(before), deliveryProgress(after))(uow),
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
