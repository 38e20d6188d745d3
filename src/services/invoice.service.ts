import { NotFoundError, UpstreamUnavailableError } from '../domain/errors.js';
import type { InvoiceRepository, InvoiceRow } from '../db/repositories/invoice.repository.js';
import { type InvoiceFilter, type MinistryAdapters, type UpstreamInvoice } from '../adapters/ministry/ministry.types.js';
import { SOURCES, type Source } from '../domain/vocabulary.js';
import type { InvoiceBody, InvoiceListBody } from '../schemas/invoice.schema.js';
import { sharedInvoiceView, sumAmounts, toInvoiceView } from './invoice.view.js';
import type { Logger } from '../domain/logger.port.js';
import { systemClock, type Clock } from '../domain/clock.port.js';

/** Asks every ministry system at once: the answers of those that answered, and those that failed (logged). */
async function fanOut<T>(log: Logger, call: (source: Source) => Promise<T>) {
  const settled = await Promise.allSettled(SOURCES.map((s) => call(s)));
  const ok: { source: Source; value: T }[] = [];
  const failed: Source[] = [];
  SOURCES.forEach((source, i) => {
    const r = settled[i] as PromiseSettledResult<T>;
    if (r.status === 'fulfilled') ok.push({ source, value: r.value });
    else {
      failed.push(source);
      log.warn({ err: r.reason, source }, 'ministry call failed');
    }
  });
  return { ok, failed };
}

export function createInvoiceService(deps: {
  invoices: InvoiceRepository;
  ministries: MinistryAdapters;
  log: Logger;
  now?: Clock;
}) {
  const now = deps.now ?? systemClock;

  /**
   * The rows this partner may be shown: not the sandbox invoices another partner planted, which the
   * simulated ministry returns to anyone searching by their payer.
   */
  async function visibleTo(partnerId: string, rows: InvoiceRow[]): Promise<InvoiceRow[]> {
    const hidden = await deps.invoices.plantedByOthers(partnerId, rows.map((r) => r.id));
    return hidden.size === 0 ? rows : rows.filter((r) => !hidden.has(r.id));
  }

  async function storeAndRecord(partnerId: string, found: UpstreamInvoice[]): Promise<InvoiceRow[]> {
    const rows = await visibleTo(partnerId, await deps.invoices.upsert(found));
    await deps.invoices.recordAccess(partnerId, rows);
    return rows;
  }

  async function requireForPartner(partnerId: string, id: string): Promise<InvoiceRow> {
    const row = await deps.invoices.findForPartner(partnerId, id);
    if (!row) throw new NotFoundError('Invoice');
    return row;
  }

  return {
    /** Live search of every source in parallel; a failing source is answered from stored copies. */
    async search(partnerId: string, filter: InvoiceFilter): Promise<InvoiceListBody> {
      const { ok, failed } = await fanOut(deps.log, (s) => deps.ministries[s].search(filter));
      const live = ok.flatMap((r) => r.value.filter((inv) => inv.source === r.source));
      const liveRows = live.length > 0 ? await deps.invoices.upsert(live) : [];
      const stored = await deps.invoices.findStored(filter, failed);
      if (ok.length === 0 && stored.length === 0) {
        throw new UpstreamUnavailableError(`all sources failed for ${filter.kind} search`);
      }
      const rows = await visibleTo(partnerId, [...liveRows, ...stored]);
      await deps.invoices.recordAccess(partnerId, rows);
      const at = now();
      return { invoices: rows.map((r) => toInvoiceView(r, at)), total: sumAmounts(rows) };
    },

    async getByRef(partnerId: string, refNum: string): Promise<InvoiceBody> {
      const { ok, failed } = await fanOut(deps.log, (s) => deps.ministries[s].getByRef(refNum));
      const found = ok.map((r) => r.value).find((inv): inv is UpstreamInvoice => inv !== null);
      if (!found) {
        if (failed.length > 0) throw new UpstreamUnavailableError(`ref lookup incomplete: ${failed.join(',')}`);
        throw new NotFoundError('Invoice');
      }
      const [row] = await storeAndRecord(partnerId, [found]);
      if (!row) throw new NotFoundError('Invoice');
      return toInvoiceView(row, now());
    },

    async getStored(partnerId: string, id: string): Promise<InvoiceBody> {
      return sharedInvoiceView(await requireForPartner(partnerId, id), now());
    },

    async refresh(partnerId: string, id: string): Promise<InvoiceBody> {
      const stored = await requireForPartner(partnerId, id);
      const source = stored.source;
      let fresh: UpstreamInvoice | null;
      try {
        fresh = await deps.ministries[source].getByRef(stored.ref_num);
      } catch (err) {
        throw new UpstreamUnavailableError(`refresh failed at ${source}`, { cause: err });
      }
      if (!fresh) throw new NotFoundError('Invoice');
      const [row] = await storeAndRecord(partnerId, [fresh]);
      if (!row) throw new NotFoundError('Invoice');
      return toInvoiceView(row, now());
    },
  };
}

export type InvoiceService = ReturnType<typeof createInvoiceService>;
