import { NotFoundError, UpstreamUnavailableError } from '../domain/errors.js';
import type { InvoiceRepository, InvoiceRow } from '../db/repositories/invoice.repository.js';
import { type InvoiceFilter, type MinistryAdapters, type UpstreamInvoice, UpstreamError } from '../domain/ministry.port.js';
import { isValueRefused } from '../db/pg-error.js';
import { SOURCES, type Source } from '../domain/vocabulary.js';
import type { InvoiceBody, InvoiceListBody } from '../schemas/invoice.schema.js';
import { sharedInvoiceView, sumAmounts } from './invoice.view.js';
import type { Logger } from '../domain/logger.port.js';
import type { Clock } from '../domain/clock.port.js';

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

/** Told of a system whose answer held a value the database refused: a malformed answer of that operation. */
export type UnstorableReport = (source: Source, operation: 'search' | 'getByRef') => void;

interface StoreDeps {
  invoices: InvoiceRepository;
  log: Logger;
  onUnstorable?: UnstorableReport;
}

/** The database refused a value of this system's answer: its failure, as a malformed answer is. */
function unstorable(deps: StoreDeps, source: Source, operation: 'search' | 'getByRef', err: unknown): UpstreamError {
  const failure = new UpstreamError(source, 'malformed', `${operation}: the database refused a value of the answer`, { cause: err });
  deps.log.warn({ err: failure, source }, 'ministry call failed');
  deps.onUnstorable?.(source, operation);
  return failure;
}

/**
 * Stores the systems' live answers in one statement. The adapters refuse the values a column
 * cannot hold; should one still reach the database, the systems are stored one by one instead, in
 * the order the one statement returns them (by source), and the one whose answer holds it fails
 * alone: the others' invoices are not lost with it.
 */
async function storeLive(
  deps: StoreDeps,
  answers: { source: Source; value: UpstreamInvoice[] }[],
): Promise<{ rows: InvoiceRow[]; refused: Source[] }> {
  // A system answers for its own invoices only.
  const bySource = answers
    .map(({ source, value }) => ({ source, invoices: value.filter((inv) => inv.source === source) }))
    .filter((a) => a.invoices.length > 0);
  if (bySource.length === 0) return { rows: [], refused: [] };
  try {
    return { rows: await deps.invoices.upsert(bySource.flatMap((a) => a.invoices)), refused: [] };
  } catch (err) {
    if (!isValueRefused(err)) throw err;
  }
  const rows: InvoiceRow[] = [];
  const refused: Source[] = [];
  for (const { source, invoices } of bySource.sort((a, b) => (a.source < b.source ? -1 : 1))) {
    try {
      rows.push(...(await deps.invoices.upsert(invoices)));
    } catch (err) {
      if (!isValueRefused(err)) throw err;
      unstorable(deps, source, 'search', err);
      refused.push(source);
    }
  }
  return { rows, refused };
}

/** Stores one system's invoice; a value the database refuses makes the lookup that system's failure. */
async function storeFound(deps: StoreDeps, found: UpstreamInvoice): Promise<InvoiceRow[]> {
  try {
    return await deps.invoices.upsert([found]);
  } catch (err) {
    if (!isValueRefused(err)) throw err;
    const failure = unstorable(deps, found.source, 'getByRef', err);
    throw new UpstreamUnavailableError(`invoice from ${found.source} could not be stored`, { cause: failure });
  }
}

export function createInvoiceService(deps: StoreDeps & {
  ministries: MinistryAdapters;
  now: Clock;
}) {
  const { now } = deps;

  /**
   * The rows this partner may be shown: not the sandbox invoices another partner planted, which the
   * simulated ministry returns to anyone searching by their payer.
   */
  async function visibleTo(partnerId: string, rows: InvoiceRow[]): Promise<InvoiceRow[]> {
    const hidden = await deps.invoices.plantedByOthers(partnerId, rows.map((r) => r.id));
    return hidden.size === 0 ? rows : rows.filter((r) => !hidden.has(r.id));
  }

  async function storeAndRecord(partnerId: string, found: UpstreamInvoice): Promise<InvoiceRow[]> {
    const rows = await visibleTo(partnerId, await storeFound(deps, found));
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
      const { rows: liveRows, refused } = await storeLive(deps, ok);
      const stored = await deps.invoices.findStored(filter, [...failed, ...refused]);
      if (ok.length === refused.length && stored.length === 0) {
        throw new UpstreamUnavailableError(`all sources failed for ${filter.kind} search`);
      }
      const rows = await visibleTo(partnerId, [...liveRows, ...stored]);
      await deps.invoices.recordAccess(partnerId, rows);
      const at = now();
      return { invoices: rows.map((r) => sharedInvoiceView(r, at)), total: sumAmounts(rows) };
    },

    async getByRef(partnerId: string, refNum: string): Promise<InvoiceBody> {
      const { ok, failed } = await fanOut(deps.log, (s) => deps.ministries[s].getByRef(refNum));
      const found = ok.map((r) => r.value).find((inv): inv is UpstreamInvoice => inv !== null);
      if (!found) {
        if (failed.length > 0) throw new UpstreamUnavailableError(`ref lookup incomplete: ${failed.join(',')}`);
        throw new NotFoundError('Invoice');
      }
      const [row] = await storeAndRecord(partnerId, found);
      if (!row) throw new NotFoundError('Invoice');
      return sharedInvoiceView(row, now());
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
      const [row] = await storeAndRecord(partnerId, fresh);
      if (!row) throw new NotFoundError('Invoice');
      return sharedInvoiceView(row, now());
    },
  };
}

export type InvoiceService = ReturnType<typeof createInvoiceService>;
