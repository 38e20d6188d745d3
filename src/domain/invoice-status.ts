export type StoredInvoiceStatus = 'open' | 'paid' | 'canceled';
export type InvoiceStatus = StoredInvoiceStatus | 'overdue';

/** Overdue is derived at read time: an open invoice whose due date has passed. */
export function effectiveInvoiceStatus(status: StoredInvoiceStatus, dueDate: Date | null, now: Date): InvoiceStatus {
  if (status === 'open' && dueDate !== null && dueDate.getTime() < now.getTime()) return 'overdue';
  return status;
}

export function isPayable(status: InvoiceStatus): boolean {
  return status === 'open' || status === 'overdue';
}
