import { LRUCache } from 'lru-cache';
import { growingBound } from '../primitives/cache-bound.helper.js';
import type { InvoiceRow } from '../db/repositories/invoice.repository.js';

/**
 * Stored invoice rows, and which partners may read each, kept in process for GET /invoices/{id}.
 * Every write through this instance forgets the rows it touched (invoice-cache.decorator.ts), and
 * so does every write another instance announces (invoice-cache.bus.ts); `ttlMs` bounds what a
 * lost announcement can cost.
 */
export interface InvoiceCache {
  get(partnerId: string, id: string): InvoiceRow | undefined;
  /** Marks the start of a database read whose rows may be remembered afterwards. */
  mark(): number;
  /** Caches rows read since `mark`, skipping any forgotten meanwhile (their read may be stale). */
  remember(partnerId: string, rows: readonly InvoiceRow[], mark: number): void;
  /**
   * Rows this instance has just written and read back since `mark`: every other instance forgets
   * them, while here they replace older copies (unless forgotten since `mark`), so the writer's own
   * read can still be remembered.
   */
  refresh(rows: readonly InvoiceRow[], mark: number): void;
  forget(ids: Iterable<string>): void;
  clear(): void;
}

interface Entry {
  row: InvoiceRow;
  /** Partners known to have retrieved it: access is only ever granted, never revoked. */
  partners: Set<string>;
}

const NO_CACHE: InvoiceCache = {
  get: () => undefined,
  mark: () => 0,
  remember: () => undefined,
  refresh: () => undefined,
  forget: () => undefined,
  clear: () => undefined,
};

export function createInvoiceCache(opts: { ttlMs: number; maxEntries: number }): InvoiceCache {
  if (opts.ttlMs <= 0 || opts.maxEntries <= 0) return NO_CACHE;
  const bound = { ...growingBound(opts.maxEntries), ttl: opts.ttlMs };
  const entries = new LRUCache<string, Entry>(bound);
  const forgottenAt = new LRUCache<string, number>(bound);
  let clock = 0;
  let clearedAt = -1;

  return {
    get(partnerId, id) {
      const entry = entries.get(id);
      return entry?.partners.has(partnerId) ? entry.row : undefined;
    },
    mark: () => clock,
    remember(partnerId, rows, mark) {
      for (const row of rows) {
        if (clearedAt > mark || (forgottenAt.get(row.id) ?? -1) > mark) continue;
        const entry = entries.get(row.id);
        if (entry && entry.row.updated_at.getTime() <= row.updated_at.getTime()) {
          entry.row = row;
          entry.partners.add(partnerId);
        } else if (!entry) {
          // Up to 20% shorter at random: rows stored by one big search must not all expire together.
          entries.set(row.id, { row, partners: new Set([partnerId]) }, { ttl: opts.ttlMs * (0.8 + 0.2 * Math.random()) });
        }
      }
    },
    refresh(rows, mark) {
      for (const row of rows) {
        const entry = entries.get(row.id);
        if (!entry) continue;
        if (clearedAt > mark || (forgottenAt.get(row.id) ?? -1) > mark) entries.delete(row.id);
        else if (entry.row.updated_at.getTime() <= row.updated_at.getTime()) entry.row = row;
      }
    },
    forget(ids) {
      clock += 1;
      for (const id of ids) {
        entries.delete(id);
        forgottenAt.set(id, clock);
      }
    },
    clear() {
      // Everything read before now counts as forgotten, so in-flight reads are not remembered either.
      clock += 1;
      entries.clear();
      forgottenAt.clear();
      clearedAt = clock;
    },
  };
}
