/* The cases screen: partners' cases by due time, one case with its evidence, and the operator's take, comment and resolve. */
import type { AdminCaseView, CaseEvidence } from '../../schemas/case.schema.js';
import { CASE_OUTCOMES } from '../../domain/vocabulary.js';
import { ApiError, byId, describeError, el, type Child } from '../page-ui/page-ui.js';
import { formatLocalTime, formatTugrik, queryString, shortId } from '../page-ui/page-format.js';
import type { ConsoleContext } from './console-context.js';
import { badge, busy, createList, idSpan, setTableState, timeCell, timelineTable, type ListPage } from './console-table.ui.js';

type Case = AdminCaseView;
type Comment = Case['comments'][number];

/** The most of a description the queue shows; the whole one is in the row's title and the case. */
const DESCRIPTION_CHARS = 90;
/** The queue's page: the admin API's default, which the count names when it is reached. */
const QUEUE_CAP = 100;
const ISO_INSTANT = /^\d{4}-\d{2}-\d{2}T/;

export interface CasesScreen {
  /** The queue, and the open case as it now is. */
  load(): Promise<void>;
  close(): void;
}

const none = () => el('span', { class: 'sub', text: '—' });
const clip = (text: string) => (text.length > DESCRIPTION_CHARS ? `${text.slice(0, DESCRIPTION_CHARS - 1)}…` : text);
/** The evidence keeps amounts as the ministry wrote them (decimal strings). */
const tugrik = (amount: string | null): string => (amount === null ? '—' : Number.isFinite(Number(amount)) ? formatTugrik(Number(amount)) : amount);
const pairs = (fields: [string, Child][]) => el('dl', { class: 'pairs' }, ...fields.map(([k, v]) => el('div', {}, el('dt', { text: k }), el('dd', {}, v ?? none()))));

/** The due time, and beneath it the mark of a case past it unresolved. */
function dueCell(c: Case): HTMLTableCellElement {
  const td = timeCell(c.dueAt);
  if (c.overdue) td.append(el('div', {}, badge('overdue')));
  return td;
}

/** The case detail card; `seq` tells an answer that a later open, action or close replaced. */
interface Detail {
  ctx: ConsoleContext;
  card: HTMLElement;
  seq: number;
  /** The case shown, or null. */
  id: string | null;
  /** The queue changed: an action moved the case. */
  reloadQueue(): void;
}

function selectRow(id: string | null): void {
  for (const r of document.querySelectorAll('#cases-table tr.case-row')) r.classList.toggle('selected', r instanceof HTMLElement && r.dataset.id === id);
}

function caseRow(detail: Detail, c: Case): HTMLTableRowElement {
  const tr = el('tr', { class: `case-row clickable${c.overdue ? ' overdue' : ''}${detail.id === c.id ? ' selected' : ''}`, tabindex: 0, dataset: { id: c.id, status: c.status, type: c.type, overdue: c.overdue } },
    dueCell(c),
    el('td', { class: 'mono', text: c.type }),
    el('td', {}, badge(c.status)),
    el('td', { class: 'partner', title: c.partnerId }, el('span', { text: c.partnerName }), ' ', el('span', { class: 'id sub', text: shortId(c.partnerId) })),
    el('td', { class: 'payment' }, idSpan(c.paymentId)),
    el('td', { class: 'assignee' }, c.assignee ?? none()),
    timeCell(c.createdAt),
    el('td', { class: 'case-desc', title: c.description, text: clip(c.description) }));
  const openIt = () => void openCase(detail, c.id);
  tr.addEventListener('click', openIt);
  tr.addEventListener('keydown', (e) => e.key === 'Enter' && openIt());
  return tr;
}

// ---- the evidence --------------------------------------------------------------------------------

/** One part of the evidence; a part the service could not gather says why instead. */
function part(name: string, title: string, error: string | null, fields: [string, Child][]): HTMLElement {
  return el('div', { class: `evidence-part${error ? ' failed' : ''}`, dataset: { part: name } },
    el('h3', { text: title }),
    error ? el('div', { class: 'part-error text-bad', text: `Not gathered: ${error}` }) : pairs(fields));
}

function evidenceParts(e: CaseEvidence): HTMLElement {
  const { payment, ministryStatus: status, ministryInvoice: invoice } = e;
  return el('div', { class: 'evidence-parts' },
    part('payment', 'In our books when the case opened', null, [
      ['Status', badge(payment.status)],
      ['Amount', tugrik(payment.amount)],
      ['Source', payment.source],
      ['Ref num', el('span', { class: 'mono', text: payment.refNum })],
      ['Finance day', payment.financeDay],
    ]),
    part('ministry-status', "The ministry's status answer", status.error, [
      ['Status', status.status ? badge(status.status) : null],
      ['Confirmed', status.confirmedAt ? formatLocalTime(status.confirmedAt) : null],
    ]),
    part('ministry-invoice', 'The invoice at the ministry', invoice.error, invoice.found
      ? [
          ['Status', invoice.status ? badge(invoice.status) : null],
          ['Amount', tugrik(invoice.amount)],
          ['Payer register', invoice.payerRegister ? el('span', { class: 'mono', text: invoice.payerRegister }) : null],
        ]
      : [['Found', el('span', { class: 'text-bad', text: 'the ministry does not know the invoice' })]]));
}

function table(id: string, headers: string[], rows: HTMLTableRowElement[], empty: string): HTMLElement {
  const t = el('table', { id }, el('thead', {}, el('tr', {}, ...headers.map((h) => el('th', { text: h })))), el('tbody', {}, ...rows));
  if (rows.length === 0) setTableState(t, 'empty', empty);
  else t.dataset.state = 'ready';
  return el('div', { class: 'table-wrap' }, t);
}

function settlementTable(s: CaseEvidence['settlement']): HTMLElement {
  const wrap = table('case-settlement', ['Payment', 'Ref num', 'Amount', 'Date'],
    s.lines.map((l) => el('tr', { class: 'settlement-row', dataset: { paymentId: l.paymentId } },
      el('td', {}, idSpan(l.paymentId)),
      el('td', { class: 'mono', text: l.refNum }),
      el('td', { class: 'num', text: tugrik(l.amount) }),
      // An instant in local time like every other; anything else as the ministry wrote it.
      ISO_INSTANT.test(l.date) ? timeCell(l.date) : el('td', { class: 'mono', text: l.date }))),
    s.financeDay ? `No settlement line of this payment or its invoice on ${s.financeDay}.` : 'No finance day: the payment never reached its ministry, so there is no settlement to read.');
  const t = wrap.querySelector('table');
  if (s.error && t) setTableState(t, 'error', `Not gathered: ${s.error}`);
  return wrap;
}

function discrepanciesTable(list: CaseEvidence['discrepancies']): HTMLElement {
  const amount = (n: number | null) => (n === null ? '—' : formatTugrik(n));
  return table('case-discrepancies', ['Found', 'Day', 'Kind', 'Source', 'Local', 'Ministry', 'Status', 'Note'],
    list.map((d) => el('tr', { class: 'discrepancy-row', dataset: { id: d.id, kind: d.kind, status: d.status } },
      timeCell(d.createdAt),
      el('td', { class: 'mono', text: d.financeDay }),
      el('td', {}, el('span', { class: 'badge kind', text: d.kind })),
      el('td', { text: d.source }),
      el('td', { class: 'num', text: amount(d.localAmount) }),
      el('td', { class: 'num', text: amount(d.ministryAmount) }),
      el('td', {}, badge(d.status)),
      el('td', { class: 'wrap', text: d.note ?? '' }))),
    'No reconciliation discrepancy of this payment.');
}

function evidenceBlock(e: CaseEvidence | null): HTMLElement {
  const box = el('div', { id: 'case-evidence', dataset: { state: e ? 'ready' : 'pending' } }, el('h3', { text: 'Evidence' }));
  if (!e) {
    box.append(el('p', { class: 'hint', text: 'Not gathered yet: the service looks the payment up with its ministry seconds after the case opens. Refresh in a moment.' }));
    return box;
  }
  box.append(
    el('div', { class: 'meta' }, 'gathered by the service at ', el('b', { text: formatLocalTime(e.gatheredAt) }), ' · the ministry\'s answers are as it gave them then'),
    evidenceParts(e),
    el('h3', { text: `Settlement lines${e.settlement.financeDay ? ` of ${e.settlement.financeDay}` : ''} (${e.settlement.lines.length})` }),
    settlementTable(e.settlement),
    el('h3', { class: 'spaced', text: `Timeline (${e.timeline.length})` }),
    el('div', { class: 'table-wrap' }, timelineTable(e.timeline, 'case-timeline')),
    el('h3', { class: 'spaced', text: `Discrepancies (${e.discrepancies.length})` }),
    discrepanciesTable(e.discrepancies));
  return box;
}

// ---- the case ------------------------------------------------------------------------------------

function commentsBlock(c: Case): HTMLElement[] {
  const item = (m: Comment) => el('li', { class: `comment ${m.author}`, dataset: { author: m.author, operator: m.operator } },
    el('div', { class: 'comment-head' },
      el('strong', { text: m.author === 'partner' ? c.partnerName : (m.operator ?? 'operator') }), ' ',
      el('span', { class: 'badge kind', text: m.author }), ' ',
      el('span', { class: 'sub', text: formatLocalTime(m.createdAt) })),
    el('div', { class: 'case-text', text: m.text }));
  return [
    el('h3', { text: `Comments (${c.comments.length})` }),
    c.comments.length > 0 ? el('ol', { id: 'case-comments', class: 'comments' }, ...c.comments.map(item)) : el('p', { id: 'case-comments', class: 'hint', text: 'No comments yet.' }),
  ];
}

function resolutionBlock(c: Case): HTMLElement | null {
  const r = c.resolution;
  if (!r) return null;
  const by = r.by === 'service' ? 'the service: the ministry confirmed the payment' : (c.resolvedOperator ?? 'an operator');
  return el('div', { id: 'case-resolution', class: 'resolution', dataset: { outcome: r.outcome, by: r.by } },
    el('h3', { text: 'Resolution' }),
    pairs([
      ['Outcome', badge(r.outcome, 'resolved')],
      ['By', by],
      ['Ministry reference', r.ministryReference ? el('span', { class: 'mono', text: r.ministryReference }) : null],
      ['Resolved', formatLocalTime(r.resolvedAt)],
    ]),
    el('p', { class: 'case-text note', text: r.note }));
}

/** An operator's action on the case: on success the case as it now is, the queue reloaded; a 409 shows it as someone else left it. */
async function act(detail: Detail, c: Case, button: HTMLButtonElement, label: string, what: string, path: string, body: unknown, done: (after: Case) => string): Promise<void> {
  const { ctx } = detail;
  await busy(button, label, async () => {
    try {
      const after = await ctx.api.data<Case>('POST', `/admin/cases/${encodeURIComponent(c.id)}/${path}`, body);
      if (detail.id !== c.id) return;
      ++detail.seq;
      ctx.errors.clear();
      renderCase(detail, after);
      ctx.notify(done(after));
      detail.reloadQueue();
    } catch (err) {
      ctx.errors.show(err, `${what} case ${shortId(c.id)}`);
      if (err instanceof ApiError && err.status === 409 && detail.id === c.id) void openCase(detail, c.id);
    }
  });
}

function actionsBlock(detail: Detail, c: Case): HTMLElement {
  const { ctx } = detail;
  const take = el('button', { type: 'button', id: 'case-take', class: 'secondary', text: 'Take' });
  take.addEventListener('click', () => void act(detail, c, take, 'Taking…', 'Taking', 'take', undefined, (after) => `Case ${shortId(c.id)} taken: assigned to ${after.assignee ?? 'you'}`));

  const text = el('textarea', { id: 'case-comment-text', rows: 3, maxlength: 2000, 'aria-label': 'Comment', placeholder: 'What you found or asked; the partner reads it with the case' });
  const send = el('button', { type: 'submit', id: 'case-comment', class: 'secondary', text: 'Comment' });
  const commentForm = el('form', { id: 'case-comment-form', autocomplete: 'off' }, el('label', { for: 'case-comment-text', text: 'Comment' }), text, el('div', { class: 'buttons' }, send));
  commentForm.addEventListener('submit', (e) => {
    e.preventDefault();
    const value = text.value.trim();
    if (!value) return ctx.errors.show(new Error('write the comment first'), `Commenting on case ${shortId(c.id)}`);
    void act(detail, c, send, 'Sending…', 'Commenting on', 'comments', { text: value }, () => `Comment added to case ${shortId(c.id)}`);
  });

  const outcome = el('select', { id: 'case-outcome', 'aria-label': 'Outcome' },
    el('option', { value: '', text: 'choose the outcome…', disabled: true, selected: true }),
    ...CASE_OUTCOMES.map((o) => el('option', { value: o, text: o })));
  const reference = el('input', { id: 'case-reference', maxlength: 100, spellcheck: 'false', placeholder: 'ministry reference (optional)', 'aria-label': 'Ministry reference' });
  const note = el('textarea', { id: 'case-note', rows: 3, maxlength: 2000, 'aria-label': 'Resolution note', placeholder: 'What was found and done; the partner reads it' });
  const resolve = el('button', { type: 'submit', id: 'case-resolve', text: 'Resolve' });
  const resolveForm = el('form', { id: 'case-resolve-form', autocomplete: 'off' },
    el('label', { for: 'case-outcome', text: 'Resolve' }), el('div', { class: 'row' }, outcome, reference), note, el('div', { class: 'buttons' }, resolve));
  resolveForm.addEventListener('submit', (e) => {
    e.preventDefault();
    const context = `Resolving case ${shortId(c.id)}`;
    if (!outcome.value) return ctx.errors.show(new Error('choose the outcome'), context);
    const written = note.value.trim();
    if (!written) return ctx.errors.show(new Error('write a note saying what was found and done'), context);
    const ref = reference.value.trim();
    void act(detail, c, resolve, 'Resolving…', 'Resolving', 'resolve', { outcome: outcome.value, note: written, ...(ref ? { ministryReference: ref } : {}) },
      (after) => `Case ${shortId(c.id)} resolved: ${after.resolution?.outcome ?? outcome.value}`);
  });

  return el('div', { id: 'case-actions' },
    el('h3', { text: 'Actions' }),
    el('div', { class: 'take-row' }, take, el('span', { class: 'hint', text: c.assignee ? `assigned to ${c.assignee}; taking it makes it yours` : 'nobody has taken it yet' })),
    el('div', { class: 'case-actions' }, commentForm, resolveForm));
}

function renderCase(detail: Detail, c: Case): void {
  const { ctx, card } = detail;
  card.dataset.state = 'ready';
  card.dataset.status = c.status;
  byId('case-detail-title').textContent = `Case ${shortId(c.id)} · ${c.type}`;
  byId('case-detail-status').replaceChildren(badge(c.status), ...(c.overdue ? [' ', badge('overdue')] : []));
  const openPayment = el('button', { type: 'button', class: 'link open-payment', text: 'open payment', onclick: () => ctx.nav.openPayment(c.paymentId) });
  const fields: [string, Child][] = [
    ['Partner', el('span', {}, el('div', { text: c.partnerName }), el('div', { class: 'id', text: c.partnerId }))],
    ['Payment', el('span', {}, el('div', { class: 'id', text: c.paymentId }), openPayment)],
    ['Type', el('span', { class: 'mono', text: c.type })],
    ['Assignee', c.assignee ?? '—'],
    ['Opened', formatLocalTime(c.createdAt)],
    ['Due', el('span', { class: c.overdue ? 'text-bad' : '', text: formatLocalTime(c.dueAt) })],
    ['Escalated', formatLocalTime(c.escalatedAt)],
    ['Updated', formatLocalTime(c.updatedAt)],
  ];
  const resolution = resolutionBlock(c);
  byId('case-detail-body').replaceChildren(
    el('dl', { class: 'detail-grid' }, ...fields.map(([k, v]) => el('div', {}, el('dt', { text: k }), el('dd', {}, v)))),
    el('h3', { text: 'Description' }),
    el('p', { id: 'case-description', class: 'case-text', text: c.description }),
    ...(resolution ? [resolution] : []),
    ...commentsBlock(c),
    ...(c.status === 'resolved' ? [] : [actionsBlock(detail, c)]),
    evidenceBlock(c.evidence));
}

async function openCase(detail: Detail, id: string): Promise<void> {
  const { ctx, card } = detail;
  const mine = ++detail.seq;
  const again = detail.id === id && !card.hidden;
  detail.id = id;
  selectRow(id);
  card.hidden = false;
  card.dataset.state = 'loading';
  card.dataset.id = id;
  // Reloading the case shown keeps it in place; another case starts from a clean card.
  if (!again) {
    byId('case-detail-title').textContent = `Case ${shortId(id)}`;
    byId('case-detail-status').replaceChildren();
    byId('case-detail-body').replaceChildren(el('div', { class: 'hint' }, el('span', { class: 'spinner' }), 'Loading the case and its evidence…'));
    card.scrollIntoView({ block: 'nearest' });
  }
  try {
    const c = await ctx.api.data<Case>('GET', `/admin/cases/${encodeURIComponent(id)}`);
    if (mine !== detail.seq) return;
    renderCase(detail, c);
  } catch (err) {
    if (mine !== detail.seq) return;
    card.dataset.state = 'error';
    byId('case-detail-body').replaceChildren(el('div', { class: 'state-error text-bad', text: `Could not load the case: ${describeError(err)}` }));
    ctx.errors.show(err, 'Loading the case');
  }
}

export function createCasesScreen(ctx: ConsoleContext): CasesScreen {
  const status = byId<HTMLSelectElement>('cases-status');
  const type = byId<HTMLSelectElement>('cases-type');
  const detail: Detail = { ctx, card: byId('case-detail'), seq: 0, id: null, reloadQueue: () => void list.load() };
  const list = createList<Case>({
    table: byId<HTMLTableElement>('cases-table'),
    count: byId('cases-count'),
    noun: 'cases',
    cap: QUEUE_CAP,
    empty: () => `No ${status.value.replace('_', ' ')} cases${type.value ? ` of type ${type.value}` : ''}.`,
    load: () => ctx.api.data<ListPage<Case>>('GET', `/admin/cases${queryString({ status: status.value, type: type.value, limit: String(QUEUE_CAP) })}`),
    row: (c) => caseRow(detail, c),
  }, ctx.errors);
  const load = async () => {
    if (detail.id && !detail.card.hidden) void openCase(detail, detail.id);
    await list.load();
  };
  const close = () => {
    detail.seq++;
    detail.id = null;
    detail.card.hidden = true;
    detail.card.dataset.state = 'idle';
    selectRow(null);
  };

  byId('cases-form').addEventListener('submit', (e) => {
    e.preventDefault();
    void load();
  });
  status.addEventListener('change', () => void list.load());
  type.addEventListener('change', () => void list.load());
  byId('case-detail-close').addEventListener('click', close);
  return { load, close };
}
