import { LRUCache } from 'lru-cache';
import type { InvoiceRow } from '../db/repositories/invoice.repository.js';

/**
 * Stored invoice rows, and which partner may read which, kept in process for GET /invoices/{id}.
 * Every write through this instance forgets the rows it touched; other instances' writes show
 * within `ttlMs`, which bounds the staleness of a copy that is itself a ministry snapshot.
 */
export interface InvoiceCache {
  get(partnerId: string, id: string): InvoiceRow | undefined;
  /** Marks the start of a database read whose rows may be remembered afterwards. */
  mark(): number;
  /** Caches rows read since `mark`, skipping any forgotten meanwhile (their read may be stale). */
  remember(partnerId: string, rows: readonly InvoiceRow[], mark: number): void;
  forget(ids: Iterable<string>): void;
}

const NO_CACHE: InvoiceCache = { get: () => undefined, mark: () => 0, remember: () => undefined, forget: () => undefined };

export function createInvoiceCache(opts: { ttlMs: number; maxEntries: number }): InvoiceCache {
  if (opts.ttlMs <= 0 || opts.maxEntries <= 0) return NO_CACHE;
  const rows = new LRUCache<string, InvoiceRow>({ max: opts.maxEntries, ttl: opts.ttlMs });
  // Access is never revoked (partner_invoices rows are only added), so it outlives row changes.
  const access = new LRUCache<string, true>({ max: opts.maxEntries, ttl: opts.ttlMs });
  const forgottenAt = new LRUCache<string, number>({ max: opts.maxEntries, ttl: opts.ttlMs });
  let clock = 0;

  return {
    get(partnerId, id) {
      return access.has(`${partnerId}:${id}`) ? rows.get(id) : undefined;
    },
    mark: () => clock,
    remember(partnerId, list, mark) {
      for (const row of list) {
        if ((forgottenAt.get(row.id) ?? -1) > mark) continue;
        rows.set(row.id, row);
        access.set(`${partnerId}:${row.id}`, true);
      }
    },
    forget(ids) {
      clock += 1;
      for (const id of ids) {
        rows.delete(id);
        forgottenAt.set(id, clock);
      }
    },
  };
}
