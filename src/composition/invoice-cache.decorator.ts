import type { InvoiceRepository, InvoiceRow } from '../db/repositories/invoice.repository.js';
import type { PaymentRepository } from '../payments/payments.module.js';
import type { UnitOfWork } from '../db/unit-of-work.js';
import type { InvoiceCache } from '../adapters/invoice-cache.js';

/**
 * The invoice cache as decorations of the repositories, so no use case handles it: writes that
 * change invoice rows forget them (on every instance, through the bus) once they are committed,
 * and partner reads are served read-through. A read that overlaps a forget is not remembered.
 */
export function invalidatingInvoices(repo: InvoiceRepository, cache: InvoiceCache): InvoiceRepository {
  // When each row was read (the cache's mark before the read), for remembering it once the partner
  // who was shown it has access: a search or lookup fills the cache for the reads that follow it.
  const readAt = new WeakMap<object, number>();
  const marked = (rows: InvoiceRow[], mark: number) => {
    for (const row of rows) readAt.set(row, mark);
    return rows;
  };
  return {
    ...repo,
    async upsert(invoices, uow) {
      if (uow) {
        // Inside a caller's transaction the rows are not committed yet: only forget them.
        const rows = await repo.upsert(invoices, uow);
        cache.forget(rows.map((r) => r.id));
        return rows;
      }
      const mark = cache.mark();
      const rows = marked(await repo.upsert(invoices), mark);
      cache.refresh(rows, mark);
      return rows;
    },
    async findStored(filter, sources) {
      const mark = cache.mark();
      return marked(await repo.findStored(filter, sources), mark);
    },
    async recordAccess(partnerId, invoices, uow) {
      await repo.recordAccess(partnerId, invoices, uow);
      if (uow) return;
      for (const invoice of invoices) {
        const mark = readAt.get(invoice);
        // Only rows this decoration read carry a mark, so the cast names what they are.
        if (mark !== undefined) cache.remember(partnerId, [invoice as InvoiceRow], mark);
      }
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
  const changed = new WeakMap<UnitOfWork, string[]>();
  return {
    ...repo,
    async transaction(fn) {
      const ids: string[] = [];
      const result = await repo.transaction((uow) => {
        changed.set(uow, ids);
        return fn(uow);
      });
      cache.forget(ids);
      return result;
    },
    async releaseInvoices(uow, paymentId, invoiceEvent) {
      const released = await repo.releaseInvoices(uow, paymentId, invoiceEvent);
      if (!invoiceEvent) return released;
      const pending = changed.get(uow);
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
    async markConfirmedIfSettled(input) {
      const paid = await repo.markConfirmedIfSettled(input);
      if (Array.isArray(paid)) cache.forget(paid);
      return paid;
    },
  };
}
