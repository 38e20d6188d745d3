/* The reconciliation screen: run a finance day, read runs and their sources, resolve discrepancies. */
import type { DiscrepancyView, ReconciliationRunView } from '../../schemas/back-office.schema.js';
import type { DiscrepancyKind } from '../../domain/vocabulary.js';
import { financeDayOf, isFinanceDay } from '../../domain/finance-day.js';
import { byId, describeError, el } from '../page-ui/page-ui.js';
import { formatLocalTime, formatTugrik, queryString, shiftFinanceDay, shortId } from '../page-ui/page-format.js';
import type { ConsoleContext } from './console-context.js';
import { badge, busy, createList, idSpan, timeCell, type ListPage } from './console-table.ui.js';

const KIND_LABEL: Record<DiscrepancyKind, [label: string, explain: string]> = {
  missing_at_ministry: ['missing at ministry', 'Confirmed here, absent from the ministry settlement'],
  missing_locally: ['missing locally', 'Settled by the ministry, unknown to this service'],
  amount_mismatch: ['amount mismatch', 'Settled with a different amount'],
  settled_but_canceled: ['settled but canceled', 'Settled by the ministry, canceled here'],
  settled_but_failed: ['settled but failed', 'Settled by the ministry, failed here'],
};

type Run = ReconciliationRunView;
const value = (id: string) => byId<HTMLInputElement | HTMLSelectElement>(id).value.trim();

const sourcesChips = (run: Run) =>
  run.sources.map((s) => el('span', { class: `chip ${s.status}`, title: s.error ? `${s.source}: ${s.error}` : `${s.source}: ${s.status}`, text: `${s.source}${s.status === 'failed' ? ' ✗' : ' ✓'}` }));

function sourcesTable(run: Run): HTMLTableElement {
  const head = el('tr', {}, el('th', { text: 'Source' }), el('th', { text: 'Status' }), el('th', { class: 'num', text: 'Matched' }), el('th', { class: 'num', text: 'Auto-confirmed' }), el('th', { class: 'num', text: 'Discrepancies' }), el('th', { text: 'Error' }));
  return el('table', { id: 'recon-sources' }, el('thead', {}, head),
    el('tbody', {}, ...run.sources.map((s) => el('tr', { dataset: { source: s.source, status: s.status } },
      el('td', { class: 'mono', text: s.source }),
      el('td', {}, badge(s.status)),
      el('td', { class: 'num', text: String(s.matched) }),
      el('td', { class: 'num', text: String(s.autoConfirmed) }),
      el('td', { class: 'num', text: String(s.discrepancies) }),
      el('td', { class: s.error ? 'text-bad' : 'sub', text: s.error ?? '—' })))));
}

function renderRun(run: Run): void {
  const card = byId('recon-result');
  card.dataset.state = 'ready';
  card.dataset.id = run.id;
  const stat = (id: string, label: string, n: number, alert = false) => el('div', { class: `stat${alert ? ' alert' : ''}` }, el('div', { class: 'v', id, text: String(n) }), el('div', { class: 'l', text: label }));
  card.replaceChildren(
    el('div', { class: 'card-head' }, el('h2', { text: `Finance day ${run.financeDay}` }), el('span', { id: 'recon-status', class: `badge ${run.status}`, dataset: { status: run.status }, text: run.status })),
    el('div', { class: 'stats' },
      stat('recon-matched', 'Matched', run.matched),
      stat('recon-auto', 'Auto-confirmed', run.autoConfirmed),
      stat('recon-discrepancies', 'Discrepancies', run.discrepancies, run.discrepancies > 0)),
    el('div', { class: 'meta' }, 'by ', el('b', { text: run.operator ?? 'schedule' }), ' · started ', el('b', { text: formatLocalTime(run.startedAt) }), ' · finished ', el('b', { text: formatLocalTime(run.finishedAt) })),
    el('div', { class: 'table-wrap' }, sourcesTable(run)));
}

function runRow(run: Run): HTMLTableRowElement {
  const tr = el('tr', { class: 'run-row clickable', tabindex: 0, dataset: { id: run.id, status: run.status } },
    timeCell(run.startedAt),
    el('td', { class: 'mono', text: run.financeDay }),
    el('td', {}, badge(run.status)),
    el('td', { class: 'num', text: String(run.matched) }),
    el('td', { class: 'num', text: String(run.autoConfirmed) }),
    el('td', { class: 'num', text: String(run.discrepancies) }),
    el('td', { class: 'nowrap' }, sourcesChips(run)),
    el('td', {}, run.operator ?? el('span', { class: 'sub', text: 'schedule' })),
    timeCell(run.finishedAt));
  const show = () => {
    for (const r of document.querySelectorAll('#runs-table tr.selected')) r.classList.remove('selected');
    tr.classList.add('selected');
    renderRun(run);
  };
  tr.addEventListener('click', show);
  tr.addEventListener('keydown', (e) => e.key === 'Enter' && show());
  return tr;
}

function resolution(ctx: ConsoleContext, d: DiscrepancyView, tr: HTMLTableRowElement): HTMLTableCellElement {
  const cell = el('td', { class: 'resolution' });
  if (d.status === 'resolved') {
    cell.append(el('div', { class: 'sub' }, `by ${d.resolvedBy ?? '—'} at ${formatLocalTime(d.resolvedAt)}`));
    if (d.note) cell.append(el('div', { class: 'note', text: d.note }));
    return cell;
  }
  const start = el('button', { type: 'button', class: 'small resolve', text: 'Resolve…' });
  start.addEventListener('click', () => openResolve(ctx, d, tr, start));
  cell.append(start);
  return cell;
}

function discrepancyRow(ctx: ConsoleContext, d: DiscrepancyView): HTMLTableRowElement {
  const [label, explain] = KIND_LABEL[d.kind];
  const tr = el('tr', { class: 'discrepancy-row', dataset: { id: d.id, kind: d.kind, status: d.status, refNum: d.refNum } });
  const openIt = () => ctx.nav.openPayment(d.paymentId);
  // A payment unknown here (missing locally) has no partner and nothing to open.
  const payment = d.partnerId ? el('td', {}, el('button', { type: 'button', class: 'link open-payment', title: d.paymentId, text: shortId(d.paymentId), onclick: openIt })) : el('td', {}, idSpan(d.paymentId));
  tr.append(
    timeCell(d.createdAt),
    el('td', { class: 'mono', text: d.financeDay }),
    el('td', {}, el('span', { class: 'badge kind', title: explain, text: label })),
    el('td', { class: 'mono', text: d.source }),
    el('td', { class: 'mono', text: d.refNum }),
    payment,
    ctx.partners.cell(d.partnerId),
    el('td', { class: 'num', text: formatTugrik(d.localAmount) }),
    el('td', { class: 'num', text: formatTugrik(d.ministryAmount) }),
    el('td', {}, badge(d.status)),
    resolution(ctx, d, tr));
  return tr;
}

/** The note form, in a full-width row under the discrepancy: inside its last cell it widened that column past the table's edge. */
function openResolve(ctx: ConsoleContext, d: DiscrepancyView, tr: HTMLTableRowElement, start: HTMLButtonElement): void {
  if (tr.nextElementSibling?.classList.contains('resolve-row')) return;
  const note = el('input', { class: 'resolve-note', maxlength: 2000, placeholder: 'Note: what was found, what was done', 'aria-label': 'Resolution note' });
  const ok = el('button', { type: 'submit', class: 'small resolve-confirm', text: 'Resolve' });
  const cancel = el('button', { type: 'button', class: 'small secondary resolve-cancel', text: 'Cancel' });
  const form = el('form', { class: 'resolve-form' }, el('label', { text: `Resolve the discrepancy of ${d.refNum}` }), note, ok, cancel);
  const row = el('tr', { class: 'resolve-row', dataset: { id: d.id } }, el('td', { colspan: tr.cells.length }, form));
  start.disabled = true;
  cancel.addEventListener('click', () => {
    row.remove();
    start.disabled = false;
  });
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    void submitResolve(ctx, d, note, ok, [tr, row]);
  });
  tr.after(row);
  note.focus();
}

async function submitResolve(ctx: ConsoleContext, d: DiscrepancyView, note: HTMLInputElement, ok: HTMLButtonElement, rows: [HTMLTableRowElement, HTMLTableRowElement]): Promise<void> {
  const text = note.value.trim();
  if (!text) {
    ctx.errors.show(new Error('write a note saying why it is resolved'), `Resolving the discrepancy of ${d.refNum}`);
    return note.focus();
  }
  note.disabled = true;
  await busy(ok, 'Resolving…', async () => {
    try {
      const resolved = await ctx.api.data<DiscrepancyView>('POST', `/admin/discrepancies/${encodeURIComponent(d.id)}/resolve`, { note: text });
      ctx.errors.clear();
      const next = discrepancyRow(ctx, resolved);
      next.classList.add('flash');
      rows[1].remove();
      rows[0].replaceWith(next);
      ctx.notify(`Discrepancy of ${d.refNum} resolved`);
    } catch (err) {
      note.disabled = false;
      ctx.errors.show(err, `Resolving the discrepancy of ${d.refNum}`);
    }
  });
}

/** An operator's run of a day: its result in the card, then the runs and discrepancies as they now are. */
async function runDay(ctx: ConsoleContext, day: string, reload: () => void): Promise<void> {
  const card = byId('recon-result');
  card.dataset.state = 'loading';
  card.replaceChildren(el('div', { class: 'hint' }, el('span', { class: 'spinner' }), `Reconciling ${day} with every ministry system…`));
  await busy(byId<HTMLButtonElement>('recon-run'), 'Running…', async () => {
    try {
      const result = await ctx.api.data<Run>('POST', '/admin/reconciliations', { financeDay: day });
      ctx.errors.clear();
      renderRun(result);
      ctx.notify(`Reconciliation of ${result.financeDay}: ${result.status}, ${result.discrepancies} discrepanc${result.discrepancies === 1 ? 'y' : 'ies'}`);
    } catch (err) {
      card.dataset.state = 'error';
      card.replaceChildren(el('div', { class: 'text-bad', text: `The reconciliation of ${day} failed: ${describeError(err)}` }));
      ctx.errors.show(err, `Reconciling ${day}`);
    }
  });
  reload();
}

function wireDayPicker(ctx: ConsoleContext, reload: () => void): void {
  const dayInput = byId<HTMLInputElement>('recon-day');
  const shift = (by: number) => () => (dayInput.value = shiftFinanceDay(dayInput.value.trim(), by, new Date()));
  dayInput.value = financeDayOf(new Date());
  byId('recon-prev').addEventListener('click', shift(-1));
  byId('recon-next').addEventListener('click', shift(1));
  byId('recon-today').addEventListener('click', () => (dayInput.value = financeDayOf(new Date())));
  byId('recon-form').addEventListener('submit', (e) => {
    e.preventDefault();
    const day = dayInput.value.trim();
    if (!isFinanceDay(day)) return ctx.errors.show(new Error('the finance day is written YYYY-MM-DD'), 'Running a reconciliation');
    void runDay(ctx, day, reload);
  });
}

export function createReconciliationScreen(ctx: ConsoleContext): { load(): void } {
  const runs = createList<Run>({
    table: byId<HTMLTableElement>('runs-table'),
    count: byId('runs-count'),
    noun: 'reconciliation runs',
    cap: 100,
    empty: () => (value('runs-day') ? `No reconciliation of ${value('runs-day')} yet.` : 'No reconciliation has run yet.'),
    load: () => ctx.api.data<ListPage<Run>>('GET', `/admin/reconciliations${queryString({ financeDay: value('runs-day') })}`),
    row: runRow,
  }, ctx.errors);
  const discrepancies = createList<DiscrepancyView>({
    table: byId<HTMLTableElement>('discrepancies-table'),
    count: byId('disc-count'),
    noun: 'discrepancies',
    cap: 500,
    empty: () => `No ${value('disc-status') ? `${value('disc-status')} ` : ''}discrepancies${value('disc-day') ? ` on ${value('disc-day')}` : ''}.`,
    load: () => ctx.api.data<ListPage<DiscrepancyView>>('GET', `/admin/discrepancies${queryString({ status: value('disc-status'), financeDay: value('disc-day') })}`),
    row: (d) => discrepancyRow(ctx, d),
  }, ctx.errors);
  const load = () => {
    void runs.load();
    void discrepancies.load();
  };

  wireDayPicker(ctx, load);
  byId('runs-form').addEventListener('submit', (e) => {
    e.preventDefault();
    void runs.load();
  });
  byId('disc-form').addEventListener('submit', (e) => {
    e.preventDefault();
    void discrepancies.load();
  });
  byId('disc-status').addEventListener('change', () => void discrepancies.load());
  return { load };
}
