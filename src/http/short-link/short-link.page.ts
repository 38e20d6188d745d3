import { PAYMENT_STATUSES, type PaymentStatus } from '../../domain/vocabulary.js';
import type { ShortLinkStatus, ShortLinkStatusBody } from '../../schemas/short-link.schema.js';

/*
 * The QR landing page's script, inlined into short-link.page.html (allowed by its hash): it polls
 * the payment's status and shows the new one without a reload, until the payment has ended.
 */

/** The payment machine's own, written into the bundle as a literal (page-script.bundler.ts). */
declare const UNRESOLVED_STATUSES: typeof import('../../payments/payment.machine.js').UNRESOLVED_STATUSES;

/** Whether each status only the page shows, none a payment holds itself, is an end. */
const PAGE_STATUS_ENDS: Record<Exclude<ShortLinkStatus, PaymentStatus>, boolean> = { expired: true };

/** The statuses of a payment that has ended: the confirmation job has nothing left to bring it to. */
const FINAL = new Set<string>(PAYMENT_STATUSES.filter((status) => !UNRESOLVED_STATUSES.includes(status)));
for (const [status, ends] of Object.entries(PAGE_STATUS_ENDS)) if (ends) FINAL.add(status);
const isFinal = (status: string | null) => status !== null && FINAL.has(status);

const BASE_MS = 3000;
const MAX_MS = 30000;
const body = document.body;
// Relative to wherever the page is served (a proxy may mount /q under another path).
const statusUrl = location.pathname.replace(/\/+$/, '') + '/status';
let delay = BASE_MS;
let timer: ReturnType<typeof setTimeout> | undefined;
let inFlight = false;

const current = () => body.getAttribute('data-status');

function show(status: unknown): void {
  if (typeof status !== 'string' || status === current()) return;
  body.setAttribute('data-status', status);
  // A paid or closed payment's page keeps no scannable QR or bank links.
  if (isFinal(status)) document.getElementById('pay')?.remove();
}

function schedule(ms: number): void {
  clearTimeout(timer);
  if (!isFinal(current()) && !document.hidden) timer = setTimeout(poll, ms);
}

async function poll(): Promise<void> {
  if (inFlight) return;
  inFlight = true;
  try {
    const res = await fetch(statusUrl, { cache: 'no-store', credentials: 'omit', headers: { accept: 'application/json' } });
    if (!res.ok) throw new Error('HTTP ' + res.status);
    show(((await res.json()) as ShortLinkStatusBody).status);
    body.classList.remove('offline');
    delay = BASE_MS;
  } catch {
    body.classList.add('offline');
    delay = Math.min(delay * 2, MAX_MS);
  } finally {
    inFlight = false;
  }
  schedule(delay);
}

// No polling while the tab is in the background; one check at once when it comes back.
document.addEventListener('visibilitychange', () => (document.hidden ? clearTimeout(timer) : poll()));
schedule(delay);
