/* Step 2 of the sandbox page: the invoice search, its result rows and the invoice picked to pay. */
import { isPayable } from '../../domain/invoice-status.js';
import type { InvoiceBody, InvoiceListBody } from '../../schemas/invoice.schema.js';
import type { PaymentBody } from '../../schemas/payment.schema.js';
import { byId, el, type ApiClient, type ErrorBox } from '../page-ui/page-ui.js';
import { formatFinanceDay, formatLocalTime, formatTugrik } from '../page-ui/page-format.js';
import { impliedInvoiceStatus } from './sandbox.format.js';
import { UNRESOLVED_STATUSES } from '../../payments/payment.machine.js';
import type { PaymentStatus } from '../../domain/vocabulary.js';

type FollowedPayment = Pick<PaymentBody, 'status' | 'invoiceId' | 'invoiceIds'>;

const PLACEHOLDERS: Record<string, string> = { ttd: 'e.g. 5317878', vehicle: 'e.g. 1234УБА', taxRef: 'e.g. TR-2025-000123' };

export interface InvoiceList {
  selected(): InvoiceBody | null;
  /** A scenario invoice just planted: the results become that invoice alone, selected to pay (or to read, when not payable). */
  showPlanted(inv: InvoiceBody): void;
  /** After a payment is confirmed or canceled, its invoices as they are now (the stored copy, no ministry call). */
  refreshAfter(payment: FollowedPayment): Promise<void>;
  /** The payment on the card (null: none): while it may still be paid, its invoices offer no second Pay. */
  follow(payment: FollowedPayment | null): void;
  /** Whether the selected invoice can be paid now. */
  payable(): boolean;
}

interface Results {
  selected: InvoiceBody | null;
  /** The invoices on screen, by id, as last read: a payment's outcome updates its rows. */
  shown: Map<string, InvoiceBody>;
  rows: HTMLTableSectionElement;
  /** The payment on the card, by the invoices it holds, while it may still be paid. */
  heldBy: { invoiceIds: string[]; status: PaymentStatus } | null;
}

const money = (n: number) => formatTugrik(n, false);

function payerText(inv: InvoiceBody): string {
  const parts = [inv.vehicleNo, inv.year !== undefined ? `year ${inv.year}` : null, inv.payer ? `${inv.payer.name} (${inv.payer.register})` : 'no payer'];
  return parts.filter(Boolean).join(' · ');
}

function invoiceRow(results: Results, inv: InvoiceBody): HTMLTableRowElement {
  const payable = isPayable(inv.status);
  const classes = [payable ? '' : 'unpayable', results.selected?.id === inv.id ? 'selected' : ''].join(' ').trim();
  const tr = el('tr', { 'data-invoice-id': inv.id, class: classes, title: payable ? 'Select to pay' : `A ${inv.status} invoice cannot be paid` },
    el('td', {}, el('div', { text: inv.description }), el('div', { class: 'sub', text: payerText(inv) })),
    el('td', { text: inv.payee.name || '—' }),
    el('td', { class: 'due', text: formatFinanceDay(inv.dueDate), title: inv.dueDate ? `due ${formatLocalTime(inv.dueDate, false)} (your time)` : '' }),
    el('td', {}, el('span', { class: `badge ${inv.status}`, 'data-status': inv.status, text: inv.status })),
    el('td', { class: 'num', text: money(inv.amount) }));
  if (payable) tr.addEventListener('click', () => select(results, inv));
  return tr;
}

function render(results: Results, invoices: InvoiceBody[], total: number): void {
  results.rows.replaceChildren();
  results.shown.clear();
  byId('results').classList.toggle('hidden', invoices.length === 0);
  byId('no-results').classList.toggle('hidden', invoices.length !== 0);
  for (const inv of invoices) {
    results.shown.set(inv.id, inv);
    results.rows.append(invoiceRow(results, inv));
  }
  byId('result-count').textContent = `${invoices.length} invoice${invoices.length === 1 ? '' : 's'}`;
  byId('result-total').textContent = money(total);
}

/** The payment that holds this invoice while the ministry may still take it, if any. */
function holder(results: Results, inv: InvoiceBody): PaymentStatus | null {
  const held = results.heldBy;
  return held && held.invoiceIds.includes(inv.id) && UNRESOLVED_STATUSES.includes(held.status) ? held.status : null;
}

const payableNow = (results: Results, inv: InvoiceBody | null) => inv !== null && isPayable(inv.status) && holder(results, inv) === null;

function renderSelection(results: Results, inv: InvoiceBody): void {
  byId('sel-desc').textContent = inv.description;
  byId('sel-id').textContent = inv.id;
  byId('sel-payer').textContent = inv.payer ? `${inv.payer.name} (${inv.payer.register})` : '—';
  byId('sel-amount').textContent = money(inv.amount);
  byId('sel-due').textContent = formatFinanceDay(inv.dueDate);
  const paying = holder(results, inv);
  byId('sel-status').replaceChildren(
    el('span', { class: `badge ${inv.status}`, text: inv.status }),
    ...(paying ? [el('span', { class: 'sub', id: 'sel-held', text: ` · in payment (${paying}): pay it again once that payment ends` })] : []),
  );
  byId<HTMLInputElement>('pay-amount').placeholder = String(inv.amount);
  byId<HTMLButtonElement>('pay-btn').disabled = !payableNow(results, inv);
}

function select(results: Results, inv: InvoiceBody): void {
  results.selected = inv;
  for (const row of results.rows.rows) row.classList.toggle('selected', row.dataset.invoiceId === inv.id);
  byId('no-selection').classList.add('hidden');
  byId('selection').classList.remove('hidden');
  byId<HTMLInputElement>('pay-amount').value = '';
  renderSelection(results, inv);
}

/** A newer reading of an invoice: its row, and the selection when it is the selected one. */
function update(results: Results, inv: InvoiceBody): void {
  if (results.shown.has(inv.id)) {
    results.shown.set(inv.id, inv);
    [...results.rows.rows].find((row) => row.dataset.invoiceId === inv.id)?.replaceWith(invoiceRow(results, inv));
  }
  if (results.selected?.id === inv.id) {
    results.selected = inv;
    renderSelection(results, inv);
  }
}

async function search(results: Results, api: ApiClient, errors: ErrorBox, query: string): Promise<void> {
  const button = byId<HTMLButtonElement>('search-btn');
  button.disabled = true;
  try {
    const { data } = await api.request<InvoiceListBody>('GET', `/invoices?${query}`);
    render(results, data.invoices, data.total);
  } catch (err) {
    errors.show(err, 'Search');
  } finally {
    button.disabled = false;
  }
}

export function createInvoiceList(api: ApiClient, errors: ErrorBox): InvoiceList {
  const results: Results = { selected: null, shown: new Map(), rows: byId<HTMLTableSectionElement>('invoice-rows'), heldBy: null };
  const kindInput = byId<HTMLSelectElement>('search-kind');
  const valueInput = byId<HTMLInputElement>('search-value');
  kindInput.addEventListener('change', () => {
    valueInput.placeholder = PLACEHOLDERS[kindInput.value] ?? '';
  });
  byId('search-form').addEventListener('submit', (e) => {
    e.preventDefault();
    const value = valueInput.value.trim();
    if (!value) return errors.show(new Error('enter a value to search for'), 'Search');
    errors.clear();
    void search(results, api, errors, `${kindInput.value}=${encodeURIComponent(value)}`);
  });

  return {
    selected: () => results.selected,
    payable: () => payableNow(results, results.selected),
    follow(payment) {
      results.heldBy = payment && { invoiceIds: payment.invoiceIds.length > 0 ? payment.invoiceIds : [payment.invoiceId], status: payment.status };
      if (results.selected) renderSelection(results, results.selected);
    },
    showPlanted(inv) {
      // Searching its payer register lists it again (and, for `linked`, the invoice settled with it).
      kindInput.value = 'ttd';
      valueInput.placeholder = PLACEHOLDERS.ttd ?? '';
      valueInput.value = inv.payer?.register ?? '';
      render(results, [inv], inv.amount);
      select(results, inv);
    },
    async refreshAfter(payment) {
      const ids = payment.invoiceIds.length > 0 ? payment.invoiceIds : [payment.invoiceId];
      for (const id of ids) {
        const known = results.shown.get(id) ?? (results.selected?.id === id ? results.selected : null);
        if (!known) continue;
        try {
          update(results, (await api.request<InvoiceBody>('GET', `/invoices/${id}`)).data);
        } catch {
          // Without the read (e.g. a 429), what the payment's outcome implies.
          update(results, { ...known, status: impliedInvoiceStatus(known, payment.status, new Date()) });
        }
      }
    },
  };
}
