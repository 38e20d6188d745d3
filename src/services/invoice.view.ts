import { effectiveInvoiceStatus } from '../domain/invoice-status.js';
import { amountToNumber, toMongo } from '../domain/money.js';
import type { InvoiceRow } from '../db/repositories/invoice.repository.js';
import type { InvoiceBody } from '../schemas/invoice.schema.js';

/** The partner-facing invoice: exactly SPEC's fields, never `source` or `ref_num`. */
export function toInvoiceView(row: InvoiceRow, now: Date): InvoiceBody {
  const view: InvoiceBody = {
    id: row.id,
    description: row.description,
    amount: amountToNumber(row.amount),
    status: effectiveInvoiceStatus(row.status, row.due_date, now),
    dueDate: row.due_date ? row.due_date.toISOString() : null,
    issuedAt: row.issued_at ? row.issued_at.toISOString() : null,
    vehicleNo: row.vehicle_no,
    payer: row.payer_register !== null ? { register: row.payer_register, name: row.payer_name ?? '' } : null,
    payee: { id: row.payee_id, name: row.payee_name },
  };
  if (row.year !== null) view.year = row.year;
  return view;
}

const views = new WeakMap<InvoiceRow, Readonly<InvoiceBody>>();

/**
 * The view of a row that is served again and again: the cache hands out the same row object, and
 * a search's or lookup's rows are the ones it caches, so the view their answer built serves the
 * reads after them. Built once per row, and copied only when the status derived from the due
 * date has moved on since.
 */
export function sharedInvoiceView(row: InvoiceRow, now: Date): Readonly<InvoiceBody> {
  let view = views.get(row);
  if (!view) {
    view = Object.freeze(toInvoiceView(row, now));
    views.set(row, view);
  }
  const status = effectiveInvoiceStatus(row.status, row.due_date, now);
  return status === view.status ? view : { ...view, status };
}

/** Sum of amounts computed exactly in möngö, returned as a JSON number. */
export function sumAmounts(rows: InvoiceRow[]): number {
  const total = rows.reduce((acc, r) => acc + toMongo(r.amount), 0n);
  const whole = total / 100n;
  const frac = total % 100n;
  return amountToNumber(frac === 0n ? whole.toString() : `${whole}.${frac.toString().padStart(2, '0')}`);
}
