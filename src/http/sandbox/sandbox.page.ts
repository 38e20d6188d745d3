/*
 * The sandbox page's script (served bundled by routes/sandbox.routes.ts): a partner's developer
 * types a sandbox key, looks invoices up (or plants a scenario invoice), pays one and follows the payment, every step a real
 * request to this API, logged on the page with its status and timing.
 */
import { byId, createApiClient, createErrorBox, el, type ApiError } from '../page-ui/page-ui.js';
import { formatClock } from '../page-ui/page-format.js';
import { createInvoiceList } from './sandbox-invoices.ui.js';
import { createPaymentCard } from './sandbox-payment.ui.js';
import { createScenarioPicker } from './sandbox-scenarios.ui.js';
import { quotaText } from './sandbox.format.js';

const KEY_STORE = 'gpc.sandbox.apiKey';
const LOG_LENGTH = 50;

function errorHint(err: ApiError): string {
  if (err.status === 429) return ` — rate limit reached, retry in ${err.retryAfterSeconds ?? 1} s`;
  if (err.status === 401) return ' — check the API key';
  return '';
}

function logRequest(method: string, path: string, status: number, ms: number, headers: Headers | null): void {
  byId('log-empty').classList.add('hidden');
  const code = status ? String(status) : 'ERR';
  const log = byId('log');
  log.prepend(
    el('li', {},
      el('span', { class: 'sub', text: formatClock(new Date()) }),
      el('span', { text: method }),
      el('span', { class: 'path', text: path, title: path }),
      el('span', { class: `code-${status ? code[0] : '0'}`, text: code }),
      el('span', { class: 'ms', text: `${ms} ms` })),
  );
  while (log.children.length > LOG_LENGTH) log.lastElementChild?.remove();
  const quota = quotaText(headers?.get('ratelimit') ?? null);
  if (quota) byId('quota').textContent = quota;
}

/** Step 1: the key, kept in this tab only. */
function keyInput(): HTMLInputElement {
  const input = byId<HTMLInputElement>('api-key');
  input.value = sessionStorage.getItem(KEY_STORE) ?? '';
  input.addEventListener('input', () => sessionStorage.setItem(KEY_STORE, input.value.trim()));
  byId('key-form').addEventListener('submit', (e) => e.preventDefault());
  const toggle = byId('key-toggle');
  toggle.addEventListener('click', () => {
    const show = input.type === 'password';
    input.type = show ? 'text' : 'password';
    toggle.textContent = show ? 'Hide' : 'Show';
  });
  return input;
}

function start(): void {
  const base = location.pathname.replace(/\/sandbox\/?$/, '');
  byId<HTMLAnchorElement>('docs-link').href = `${base}/docs`;
  const key = keyInput();
  const errors = createErrorBox(errorHint);
  const api = createApiClient({
    base,
    headers: (): Record<string, string> => (key.value.trim() ? { 'x-api-key': key.value.trim() } : {}),
    onAnswer: logRequest,
  });
  const invoices = createInvoiceList(api, errors);
  createPaymentCard(api, errors, invoices);
  createScenarioPicker(api, errors, invoices, key);
}

start();
