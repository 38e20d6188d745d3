/* Steps 3 and 4 of the sandbox page: paying the picked invoice, then watching, approving or canceling the payment. */
import type { Static } from 'typebox';
import { UNRESOLVED_STATUSES, canMove } from '../../payments/payment.machine.js';
import type { PaymentStatus } from '../../domain/vocabulary.js';
import type { CancelBody, CreatePaymentBody, PaymentBody, PaymentCreatedBody, QrPayBody } from '../../schemas/payment.schema.js';
import { ApiError, byId, el, type ApiClient, type ErrorBox } from '../page-ui/page-ui.js';
import { formatLocalTime, formatTugrik } from '../page-ui/page-format.js';
import type { InvoiceList } from './sandbox-invoices.ui.js';
import { logoSrc, randomUuid, safeLink } from './sandbox.format.js';

const MAX_POLLS = 45;
const money = (n: number) => formatTugrik(n, false);
/** Unresolved payments are the ones the ministry may still move: the page keeps asking about those. */
const settled = (status: PaymentStatus) => !UNRESOLVED_STATUSES.includes(status);

/** What each ended state tells the tester; the QR and the bank apps go away with it, since paying them no longer settles anything. */
const ENDED: Partial<Record<PaymentStatus, string>> = {
  confirmed: 'Paid: the ministry confirmed the payment. Canceling it opens its invoices again.',
  canceled: 'Canceled: this QR and its bank links no longer pay anything; the invoices are open again.',
  failed: 'Failed: the ministry did not take the payment; nothing was paid.',
};

type CreatePayment = Static<typeof CreatePaymentBody>;
type Payment = Omit<PaymentCreatedBody, 'qrpay' | 'success' | 'message'> & Pick<PaymentBody, 'paidAt'>;

interface Attempt {
  invoiceId: string;
  amount: number | undefined;
  key: string;
  retryable: boolean;
}

/** The payment card's state: the payment on screen, the attempt a retry may repeat, the status poll. */
interface Card {
  api: ApiClient;
  errors: ErrorBox;
  invoices: InvoiceList;
  payment: Payment | null;
  lastAttempt: Attempt | null;
  /** The last payment status whose effect on the invoice rows was read back. */
  syncedStatus: PaymentStatus | null;
  pollTimer: ReturnType<typeof setTimeout> | undefined;
  polls: number;
}

// A new payment attempt may start while a request for the old one is in flight: its answer is dropped.
const current = (card: Card, id: string) => card.payment?.id === id;

function setBadge(status: string): void {
  const badge = byId('payment-status');
  badge.textContent = status;
  badge.className = status ? `badge ${status}` : 'badge';
  badge.dataset.status = status;
}

function renderQr(qr: QrPayBody | undefined): void {
  const img = byId<HTMLImageElement>('qr-img');
  if (qr?.qrImage) img.src = `data:image/png;base64,${qr.qrImage}`;
  else img.removeAttribute('src');
  img.classList.toggle('hidden', !qr?.qrImage);
  byId('qr-text').textContent = qr?.qrText ?? '';
  byId('payment-short').replaceChildren(qr?.shortUrl ? el('a', { href: qr.shortUrl, target: '_blank', rel: 'noopener', text: qr.shortUrl }) : '—');
  byId('deeplinks').replaceChildren(
    ...(qr?.urls ?? []).map((u, i) =>
      el('li', {}, el('a', { href: safeLink(u.link), title: u.link },
        el('img', { class: 'logo', alt: '', width: 28, height: 28, src: logoSrc(u.name, i) }),
        el('span', {}, el('div', { class: 'link-name', text: u.name }), el('div', { class: 'link-desc', text: u.description })))),
    ),
  );
}

/** The QR and the bank apps while the payment can still be paid; the ended state's note once it cannot. */
function renderStage(status: PaymentStatus): void {
  const ended = ENDED[status];
  byId('qr-box').classList.toggle('hidden', ended !== undefined);
  byId('pay-grid').classList.toggle('no-qr', ended !== undefined);
  byId('pay-apps').classList.toggle('hidden', ended !== undefined);
  const note = byId('payment-ended');
  note.textContent = ended ?? '';
  note.classList.toggle('hidden', ended === undefined);
  const cancelable = canMove(status, 'partner_canceled');
  byId('approve-btn').classList.toggle('hidden', status !== 'submitted');
  byId<HTMLButtonElement>('approve-btn').disabled = status !== 'submitted';
  byId('cancel-btn').classList.toggle('hidden', !cancelable);
  byId<HTMLButtonElement>('cancel-btn').disabled = !cancelable;
  byId('refresh-btn').classList.toggle('hidden', settled(status) && !cancelable);
}

// ---- watching the payment ------------------------------------------------------------------------

function setPolling(on: boolean, note = ''): void {
  byId('poll-spinner').classList.toggle('on', on);
  byId('poll-note').textContent = note;
}

function stopPolling(card: Card, note = ''): void {
  clearTimeout(card.pollTimer);
  card.pollTimer = undefined;
  setPolling(false, note);
}

function schedule(card: Card, ms: number): void {
  clearTimeout(card.pollTimer);
  card.pollTimer = setTimeout(() => void pollOnce(card), ms);
}

function startPolling(card: Card): void {
  stopPolling(card);
  if (!card.payment || settled(card.payment.status)) return;
  card.polls = 0;
  setPolling(true, 'waiting for the ministry…');
  schedule(card, 1000);
}

async function pollOnce(card: Card): Promise<void> {
  if (!card.payment) return;
  const id = card.payment.id;
  card.polls += 1;
  try {
    const { data } = await card.api.request<PaymentBody>('GET', `/payments/${id}`);
    if (!current(card, id)) return;
    updatePayment(card, data);
    if (settled(data.status)) return stopPolling(card, data.status === 'confirmed' ? 'the invoice is paid' : '');
    if (card.polls >= MAX_POLLS) return stopPolling(card, 'stopped polling; use Refresh status');
    schedule(card, 1000);
  } catch (err) {
    if (!current(card, id)) return;
    card.errors.show(err, 'Status check');
    if (!(err instanceof ApiError && err.retryable && card.polls < MAX_POLLS)) return stopPolling(card, 'stopped polling; use Refresh status');
    const wait = err.status === 429 ? Math.max(1, err.retryAfterSeconds ?? 1) * 1000 : 2000;
    setPolling(true, `retrying in ${wait / 1000} s`);
    schedule(card, wait);
  }
}

// ---- the card ------------------------------------------------------------------------------------

/** Empties the payment card (hidden until the next answer) and stops watching the old payment. */
function clearPayment(card: Card): void {
  stopPolling(card);
  card.payment = null;
  card.syncedStatus = null;
  byId('payment-card').classList.add('hidden');
  byId('refusal').classList.add('hidden');
  byId('payment-body').classList.remove('hidden');
  setBadge('');
  for (const id of ['payment-id', 'payment-amount', 'payment-invoices', 'payment-idem']) byId(id).textContent = '';
  byId('paid-at').textContent = '—';
  renderQr(undefined);
  renderStage('pending');
  card.invoices.follow(null);
}

function updatePayment(card: Card, next: Payment): void {
  const payment = { ...card.payment, ...next };
  card.payment = payment;
  setBadge(next.status);
  byId('payment-amount').textContent = money(next.amount);
  byId('payment-invoices').textContent = next.invoiceIds.join('\n');
  byId('paid-at').textContent = next.paidAt ? formatLocalTime(next.paidAt, false) : '—';
  renderStage(next.status);
  card.invoices.follow(payment);
  // Confirmed means its invoices are paid; canceled, open again: the rows follow.
  if ((next.status === 'confirmed' || next.status === 'canceled') && card.syncedStatus !== next.status) {
    card.syncedStatus = next.status;
    void card.invoices.refreshAfter(payment);
  }
}

function showPayment(card: Card, created: PaymentCreatedBody, idemKey: string, replayed: boolean): void {
  clearPayment(card);
  const { qrpay, success: _success, message: _message, ...payment } = created;
  byId('payment-card').classList.remove('hidden');
  byId('payment-id').textContent = created.id;
  byId('payment-idem').textContent = idemKey + (replayed ? ' (replayed)' : '');
  renderQr(qrpay);
  updatePayment(card, payment);
  startPolling(card);
}

/** A 422: the payment was refused (amount, an invoice already paid or in payment, a reused idempotency key). */
function showRefusal(err: ApiError, body: CreatePayment, key: string): void {
  byId('payment-card').classList.remove('hidden');
  byId('payment-body').classList.add('hidden');
  byId('refusal').classList.remove('hidden');
  setBadge('refused');
  setPolling(false);
  byId('refusal-status').textContent = `${err.statusLine} · no payment was made`;
  byId('refusal-text').textContent = err.message;
  byId('refusal-invoice').textContent = body.invoiceId + (body.amount !== undefined ? ` (amount ${money(body.amount)})` : '');
  byId('refusal-ref').textContent = err.body && 'refNum' in err.body ? err.body.refNum : '—';
  byId('refusal-idem').textContent = key;
}

/** POST /payments with a fresh idempotency key, or the last one when this repeats an attempt worth retrying. */
async function pay(card: Card, invoiceId: string, raw: string): Promise<void> {
  const body: CreatePayment = raw === '' ? { invoiceId } : { invoiceId, amount: Number(raw) };
  const last = card.lastAttempt;
  const same = last?.retryable && last.invoiceId === body.invoiceId && last.amount === body.amount;
  const attempt: Attempt = { invoiceId, amount: body.amount, key: same && last ? last.key : randomUuid(), retryable: false };
  card.lastAttempt = attempt;
  const button = byId<HTMLButtonElement>('pay-btn');
  button.disabled = true;
  try {
    const { data, headers } = await card.api.request<PaymentCreatedBody>('POST', '/payments', { body, headers: { 'x-idempotency-key': attempt.key } });
    card.lastAttempt = null;
    showPayment(card, data, attempt.key, headers.get('idempotent-replayed') === 'true');
  } catch (err) {
    attempt.retryable = err instanceof ApiError && err.retryable;
    if (err instanceof ApiError && err.status === 422) showRefusal(err, body, attempt.key);
    else card.errors.show(err, attempt.retryable ? 'Payment (retry reuses the same idempotency key)' : 'Payment');
  } finally {
    button.disabled = !card.invoices.payable();
  }
}

/** Runs `action` for the payment on screen; an answer that arrives after another payment replaced it is dropped. */
function onPaymentButton(card: Card, id: string, context: string, action: (paymentId: string) => Promise<void>): void {
  byId(id).addEventListener('click', async () => {
    if (!card.payment) return;
    const paymentId = card.payment.id;
    card.errors.clear();
    try {
      await action(paymentId);
    } catch (err) {
      if (!current(card, paymentId)) return;
      card.errors.show(err, context);
      if (card.payment) renderStage(card.payment.status);
    }
  });
}

function wireButtons(card: Card): void {
  onPaymentButton(card, 'refresh-btn', 'Status check', async (id) => {
    const { data } = await card.api.request<PaymentBody>('GET', `/payments/${id}`);
    if (!current(card, id)) return;
    updatePayment(card, data);
    if (!settled(data.status) && !card.pollTimer) startPolling(card);
  });
  onPaymentButton(card, 'approve-btn', 'Approve', async (id) => {
    byId<HTMLButtonElement>('approve-btn').disabled = true;
    await card.api.request('POST', '/sandbox/approve', { body: { paymentId: id } });
    if (!current(card, id)) return;
    setPolling(true, 'approved in the simulator; waiting for confirmation…');
    card.polls = 0;
    schedule(card, 300);
  });
  onPaymentButton(card, 'cancel-btn', 'Cancel', async (id) => {
    byId<HTMLButtonElement>('cancel-btn').disabled = true;
    const { data } = await card.api.request<Static<typeof CancelBody>>('DELETE', `/payments/${id}`);
    if (!current(card, id) || !card.payment || !data.canceled) return;
    stopPolling(card, 'invoices are open again');
    updatePayment(card, { ...card.payment, status: 'canceled', paidAt: undefined });
  });
}

export function createPaymentCard(api: ApiClient, errors: ErrorBox, invoices: InvoiceList): void {
  const card: Card = { api, errors, invoices, payment: null, lastAttempt: null, syncedStatus: null, pollTimer: undefined, polls: 0 };
  byId('pay-form').addEventListener('submit', (e) => {
    e.preventDefault();
    const selected = invoices.selected();
    if (!selected || !invoices.payable()) return;
    errors.clear();
    // A new attempt replaces whatever the payment card showed: its result is the only one shown.
    clearPayment(card);
    void pay(card, selected.id, byId<HTMLInputElement>('pay-amount').value.trim());
  });
  wireButtons(card);
}
