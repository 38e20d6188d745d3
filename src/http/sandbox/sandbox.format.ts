/* The sandbox page's pure helpers: bank badges, links the page may follow, the quota header, invoice outcomes. */
import { effectiveInvoiceStatus, invoiceMove } from '../../domain/invoice-status.js';
import type { InvoiceStatus, PaymentStatus } from '../../domain/vocabulary.js';
import type { InvoiceBody } from '../../schemas/invoice.schema.js';

// By position in the list, so neighbouring badges never share a color.
const LOGO_COLORS = ['#1d4ed8', '#15803d', '#c2410c', '#7e22ce', '#be123c', '#0e7490', '#475467', '#a21caf', '#4d7c0f', '#1e3a8a', '#b45309', '#0f766e', '#9f1239', '#6d28d9', '#854d0e', '#0369a1'];
const LOGO_SKIP = new Set(['bank', 'and', 'of', 'the']);

/** Up to three initials of a bank's name, leaving out "Bank", "of"… unless nothing else is left. */
export function initials(name: string): string {
  const words = name.split(/[\s-]+/).filter(Boolean);
  const kept = words.filter((w) => !LOGO_SKIP.has(w.toLowerCase()));
  return (kept.length > 0 ? kept : words).slice(0, 3).map((w) => ([...w][0] ?? '').toUpperCase()).join('') || '?';
}

/**
 * A bank's badge as a data: URL (its initials on a colored square). The page draws logos itself
 * and never fetches the configured logo URLs: it makes no request to another host.
 */
export function logoSrc(name: string, index: number): string {
  const text = initials(name).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
  const size = text.length > 2 ? 9.5 : text.length === 2 ? 11.5 : 14;
  const svg =
    '<svg xmlns="http://www.w3.org/2000/svg" width="28" height="28" viewBox="0 0 28 28">' +
    `<rect width="28" height="28" rx="7" fill="${LOGO_COLORS[index % LOGO_COLORS.length]}"/>` +
    `<text x="14" y="14.5" text-anchor="middle" dominant-baseline="middle" fill="#fff" font-size="${size}" font-weight="700" ` +
    `font-family="system-ui, -apple-system, 'Segoe UI', Roboto, 'Noto Sans', sans-serif">${text}</text></svg>`;
  return `data:image/svg+xml,${encodeURIComponent(svg)}`;
}

/** A deeplink, unless it would run script or inline content in the page. */
export const safeLink = (link: string): string => (/^\s*(javascript|data|vbscript):/i.test(link) ? '#' : link);

/** "quota left: second 4 · minute 59" from a RateLimit header (`"second";r=4, "minute";r=59`); '' without one. */
export function quotaText(header: string | null): string {
  if (!header) return '';
  const parts: string[] = [];
  for (const item of header.split(',')) {
    const m = /"([^"]+)"\s*;\s*r=(\d+)/.exec(item);
    if (m) parts.push(`${m[1]} ${m[2]}`);
  }
  return parts.length > 0 ? `quota left: ${parts.join(' · ')}` : '';
}

/**
 * What a payment's outcome makes of an invoice it holds, for when the invoice cannot be read back
 * (a 429, say): the invoice table's move for the payment's event, seen at `now` (overdue again
 * when it is open past its due date). Any other payment status leaves the invoice as it was.
 */
export function impliedInvoiceStatus(invoice: Pick<InvoiceBody, 'status' | 'dueDate'>, paymentStatus: PaymentStatus, now: Date): InvoiceStatus {
  const event = paymentStatus === 'confirmed' ? 'payment_confirmed' : paymentStatus === 'canceled' ? 'payment_canceled' : null;
  if (!event) return invoice.status;
  return effectiveInvoiceStatus(invoiceMove(event).to, invoice.dueDate ? new Date(invoice.dueDate) : null, now);
}

/** A v4 UUID for an idempotency key; crypto.randomUUID exists only on https and localhost pages. */
export function randomUuid(): string {
  if (typeof crypto.randomUUID === 'function') return crypto.randomUUID();
  const b = crypto.getRandomValues(new Uint8Array(16));
  b[6] = ((b[6] ?? 0) & 0x0f) | 0x40;
  b[8] = ((b[8] ?? 0) & 0x3f) | 0x80;
  const h = [...b].map((x) => x.toString(16).padStart(2, '0')).join('');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}
