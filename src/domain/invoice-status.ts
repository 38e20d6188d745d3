import type { InvoiceStatus, StoredInvoiceStatus } from './vocabulary.js';
import { movesOf, type Move, type Transition } from './transition-table.js';


/** What a payment does to the invoices it holds. */
export type InvoiceEvent = 'payment_confirmed' | 'payment_canceled';

export type InvoiceTransition = Transition<InvoiceStatus, InvoiceEvent, StoredInvoiceStatus>;

/**
 * The invoice moves a payment makes. `overdue` is never stored: it is `open` seen after the due
 * date (see isOverdue), so the rows leaving `overdue` apply to the stored `open`.
 */
export const INVOICE_TRANSITIONS: readonly InvoiceTransition[] = [
  { from: 'open', event: 'payment_confirmed', to: 'paid' },
  { from: 'overdue', event: 'payment_confirmed', to: 'paid' },
  { from: 'paid', event: 'payment_canceled', to: 'open' },
];

/** The stored states an event may leave from, and the state it leads to. */
export const invoiceMove: (event: InvoiceEvent) => Move<StoredInvoiceStatus, InvoiceEvent> = movesOf(
  'invoice',
  INVOICE_TRANSITIONS.map((t) => ({ ...t, from: t.from === 'overdue' ? 'open' : t.from })),
);

/** The one overdue rule: stored `open` with a due date strictly in the past. The summary counters mirror it (test/integration/overdue-rule.test.ts). */
export function isOverdue(status: StoredInvoiceStatus, dueDate: Date | null, now: Date): boolean {
  return status === 'open' && dueDate !== null && dueDate.getTime() < now.getTime();
}

/** Overdue is derived at read time: an open invoice whose due date has passed. */
export function effectiveInvoiceStatus(status: StoredInvoiceStatus, dueDate: Date | null, now: Date): InvoiceStatus {
  return isOverdue(status, dueDate, now) ? 'overdue' : status;
}

export function isPayable(status: InvoiceStatus): boolean {
  return status === 'open' || status === 'overdue';
}
