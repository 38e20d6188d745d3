import type { InvoiceRepository } from '../db/repositories/invoice.repository.js';
import type { PaymentRepository, Trx } from '../db/repositories/payment.repository.js';
import type { InvoiceCache } from './invoice-cache.js';

/**
 * The invoice cache as decorations of the repositories, so no use case handles it: writes that
 * change invoice rows forget them (on every instance, through the bus) once they are committed,
 * and partner reads are served read-through. A read that overlaps a forget is not remembered.
 */
export function invalidatingInvoices(repo: InvoiceRepository, cache: InvoiceCache): InvoiceRepository {
  return {
    ...repo,
    async upsert(invoices) {
      const rows = await repo.upsert(invoices);
      cache.forget(rows.map((r) => r.id));
      return rows;
    },
  };
}

/** GET /invoices/{id}'s read: from process memory while fresh; payments read through the raw repository. */
export function readThroughInvoices(repo: InvoiceRepository, cache: InvoiceCache): InvoiceRepository {
  return {
    ...invalidatingInvoices(repo, cache),
    async findForPartner(partnerId, id) {
      const cached = cache.get(partnerId, id);
      if (cached) return cached;
      const mark = cache.mark();
      const row = await repo.findForPartner(partnerId, id);
      if (row) cache.remember(partnerId, [row], mark);
      return row;
    },
  };
}

/** Payment writes that reopen or pay invoices forget those invoices after their transaction commits. */
export function invalidatingPayments(repo: PaymentRepository, cache: InvoiceCache): PaymentRepository {
  // Invoices changed inside each open transaction; forgetting before the commit would let a read
  // in between cache the old row again.
  const changed = new WeakMap<Trx, string[]>();
  return {
    ...repo,
    async transaction(fn) {
      const ids: string[] = [];
      const result = await repo.transaction((trx) => {
        changed.set(trx, ids);
        return fn(trx);
      });
      cache.forget(ids);
      return result;
    },
    async releaseInvoices(trx, paymentId, invoiceEvent) {
      const released = await repo.releaseInvoices(trx, paymentId, invoiceEvent);
      if (!invoiceEvent) return released;
      const pending = changed.get(trx);
      // A transaction not opened through this decoration: forget now rather than never.
      if (pending) pending.push(...released);
      else cache.forget(released);
      return released;
    },
    async markConfirmed(input) {
      const paid = await repo.markConfirmed(input);
      cache.forget(paid ?? []);
      return paid;
    },
  };
}
