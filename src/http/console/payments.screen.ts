/* The payments screen: search payments across partners, and one payment's detail and timeline. */
import type { AdminPaymentDetailView, AdminPaymentView } from '../../schemas/back-office.schema.js';
import { byId, describeError, el, type Child } from '../page-ui/page-ui.js';
import { financeDayLabel, formatLocalTime, formatTugrik, queryString, timeBound } from '../page-ui/page-format.js';
import type { ConsoleContext } from './console-context.js';
import { badge, createList, dayTimeCell, idSpan, timeCell, timelineTable, type ListPage } from './console-table.ui.js';

const FILTER_INPUTS = ['pay-paymentId', 'pay-invoiceId', 'pay-refNum', 'pay-partnerId', 'pay-from', 'pay-to'] as const;

export interface PaymentsScreen {
  /** The first load on showing the screen. */
  load(): Promise<void>;
  /** A search of one partner's payments, the other filters cleared. */
  showPartner(partnerId: string): Promise<void>;
  open(id: string): Promise<void>;
  close(): void;
}

const input = (id: string) => byId<HTMLInputElement>(id);

/** The filters as the query string of GET /admin/payments; throws for a time bound it cannot read. */
function paymentQuery(cursor: string | null): string {
  return queryString({
    paymentId: input('pay-paymentId').value,
    invoiceId: input('pay-invoiceId').value,
    refNum: input('pay-refNum').value,
    partnerId: input('pay-partnerId').value,
    status: byId<HTMLSelectElement>('pay-status').value,
    from: timeBound(input('pay-from').value, 'From'),
    to: timeBound(input('pay-to').value, 'To'),
    cursor,
  });
}

function selectRow(tr: HTMLTableRowElement | null): void {
  for (const r of document.querySelectorAll('#payments-table tr.selected')) r.classList.remove('selected');
  tr?.classList.add('selected');
}

function paymentRow(ctx: ConsoleContext, p: AdminPaymentView, open: (id: string) => void): HTMLTableRowElement {
  const tr = el('tr', { class: 'payment-row clickable', tabindex: 0, dataset: { id: p.id, status: p.status } },
    dayTimeCell(p.createdAt),
    el('td', {}, idSpan(p.id)),
    ctx.partners.cell(p.partnerId),
    el('td', { class: 'mono' }, p.refNum),
    el('td', {}, p.source),
    el('td', { class: 'num' }, formatTugrik(p.amount)),
    el('td', {}, badge(p.status), p.failureReason ? el('div', { class: 'sub', text: p.failureReason }) : null),
    timeCell(p.submittedAt),
    dayTimeCell(p.paidAt),
    timeCell(p.canceledAt));
  const openIt = () => {
    selectRow(tr);
    open(p.id);
  };
  tr.addEventListener('click', openIt);
  tr.addEventListener('keydown', (e) => e.key === 'Enter' && openIt());
  return tr;
}

/** A local time, and the finance day it falls on where the viewer's clock is not Ulaanbaatar's. */
function withFinanceDay(iso: string | null): Child {
  const label = iso ? financeDayLabel(iso, new Date(iso).getTimezoneOffset()) : null;
  return label ? el('span', {}, formatLocalTime(iso), el('div', { class: 'finance-day sub', text: label })) : formatLocalTime(iso);
}

function renderPayment(ctx: ConsoleContext, p: AdminPaymentDetailView): void {
  byId('payment-detail-status').replaceChildren(badge(p.status));
  const partner = ctx.partners.get(p.partnerId);
  const invoiceIds = p.invoiceIds.length > 0 ? p.invoiceIds : [p.invoiceId];
  const fields: [string, Child][] = [
    ['Partner', el('span', {}, partner ? el('div', { text: partner.name }) : null, el('div', { class: 'id', text: p.partnerId }))],
    ['Ref num', el('span', { class: 'mono', text: p.refNum })],
    ['Source', p.source],
    ['Amount', el('strong', { id: 'payment-amount', text: formatTugrik(p.amount) })],
    [invoiceIds.length > 1 ? `Invoices (${invoiceIds.length})` : 'Invoice', el('span', {}, ...invoiceIds.map((id, n) => el('span', { class: 'id', text: (n ? ', ' : '') + id })))],
    ['Failure reason', p.failureReason ?? '—'],
    ['Created', withFinanceDay(p.createdAt)],
    ['Updated', formatLocalTime(p.updatedAt)],
    ['Submitted', formatLocalTime(p.submittedAt)],
    ['Paid', withFinanceDay(p.paidAt)],
    ['Canceled', formatLocalTime(p.canceledAt)],
  ];
  const grid = el('dl', { class: 'detail-grid' }, ...fields.map(([k, v]) => el('div', {}, el('dt', { text: k }), el('dd', {}, v))));
  byId('payment-detail-body').replaceChildren(grid, el('h3', { text: `Timeline (${p.timeline.length})` }), el('div', { class: 'table-wrap' }, timelineTable(p.timeline)));
}

/** The detail card; `seq` tells an answer that a later open or a close replaced. */
interface Detail {
  ctx: ConsoleContext;
  card: HTMLElement;
  seq: number;
}

async function openPayment(detail: Detail, id: string): Promise<void> {
  const { ctx, card } = detail;
  const mine = ++detail.seq;
  card.hidden = false;
  card.dataset.state = 'loading';
  card.dataset.id = id;
  byId('payment-detail-title').textContent = `Payment ${id}`;
  byId('payment-detail-status').replaceChildren();
  byId('payment-detail-body').replaceChildren(el('div', { class: 'hint' }, el('span', { class: 'spinner' }), 'Loading the payment and its timeline…'));
  card.scrollIntoView({ block: 'nearest' });
  try {
    const p = await ctx.api.data<AdminPaymentDetailView>('GET', `/admin/payments/${encodeURIComponent(id)}`);
    if (mine !== detail.seq) return;
    renderPayment(ctx, p);
    card.dataset.state = 'ready';
  } catch (err) {
    if (mine !== detail.seq) return;
    card.dataset.state = 'error';
    byId('payment-detail-body').replaceChildren(el('div', { class: 'state-error text-bad', text: `Could not load the payment: ${describeError(err)}` }));
    ctx.errors.show(err, 'Loading the payment');
  }
}

function resetFilters(): void {
  for (const id of FILTER_INPUTS) input(id).value = '';
  byId<HTMLSelectElement>('pay-status').value = '';
}

export function createPaymentsScreen(ctx: ConsoleContext): PaymentsScreen {
  const detail: Detail = { ctx, card: byId('payment-detail'), seq: 0 };
  const open = (id: string) => openPayment(detail, id);
  const close = () => {
    detail.seq++;
    detail.card.hidden = true;
    detail.card.dataset.state = 'idle';
    selectRow(null);
  };
  const list = createList<AdminPaymentView>({
    table: byId<HTMLTableElement>('payments-table'),
    more: byId<HTMLButtonElement>('payments-more'),
    count: byId('payments-count'),
    noun: 'payments',
    empty: () => (paymentQuery(null) ? 'No payment matches these filters.' : 'No payments yet.'),
    load: async (cursor) => ctx.api.data<ListPage<AdminPaymentView>>('GET', `/admin/payments${paymentQuery(cursor)}`),
    row: (p) => paymentRow(ctx, p, (id) => void open(id)),
  }, ctx.errors);

  byId('payments-form').addEventListener('submit', (e) => {
    e.preventDefault();
    void list.load();
  });
  byId('payments-clear').addEventListener('click', () => {
    resetFilters();
    void list.load();
  });
  byId('payment-detail-close').addEventListener('click', close);

  return {
    load: () => list.load(),
    showPartner(partnerId) {
      resetFilters();
      input('pay-partnerId').value = partnerId;
      return list.load();
    },
    open,
    close,
  };
}
