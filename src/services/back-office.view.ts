import { amountToNumber } from '../domain/money.js';
import { camelRow, isoDates } from '../db/rows/row.mapper.js';
import type { HistoryRow, PaymentListRow } from '../db/repositories/payment-search.repository.js';
import type { DeliveryLogRow } from '../db/repositories/webhook-delivery.repository.js';
import type { AuditRow } from '../db/repositories/audit.repository.js';
import type { AdminDeliveryView, AdminPaymentDetailView, AdminPaymentView, AuditEntryView } from '../schemas/back-office.schema.js';

type TimelineEntryView = AdminPaymentDetailView['timeline'][number];

const paymentRow = camelRow([
  'id', 'partner_id', 'invoice_id', 'ref_num', 'source', 'amount', 'status', 'failure_reason',
  'created_at', 'updated_at', 'submitted_at', 'paid_at', 'canceled_at',
]);

const deliveryRow = camelRow([
  'id', 'webhook_id', 'partner_id', 'url', 'event', 'event_id', 'status', 'attempts', 'last_status_code', 'last_error',
  'next_attempt_at', 'delivered_at', 'created_at', 'webhook_disabled_reason',
]);

const auditRow = camelRow(['id', 'operator', 'action', 'target_type', 'target_id', 'before', 'after', 'created_at']);

export function paymentView(row: PaymentListRow): AdminPaymentView {
  const view = isoDates(paymentRow(row));
  return { ...view, amount: amountToNumber(view.amount) };
}

export function timelineEntryView(h: HistoryRow): TimelineEntryView {
  return { at: new Date(h.at).toISOString(), from: h.from_status, to: h.to_status, event: h.event, cause: h.cause, detail: h.detail };
}

export function deliveryView(row: DeliveryLogRow): AdminDeliveryView {
  return isoDates(deliveryRow(row));
}

/** What the audit log keeps of a redelivery: how far the delivery had got. */
export function deliveryProgress(row: DeliveryLogRow) {
  const { status, attempts } = deliveryView(row);
  return { status, attempts };
}

export function auditView(row: AuditRow): AuditEntryView {
  const view = isoDates(auditRow(row));
  return { ...view, id: String(view.id) };
}
