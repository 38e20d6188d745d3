import { describe, expect, it } from 'vitest';
import { impliedInvoiceStatus, initials, logoSrc, quotaText, randomUuid, safeLink } from '../../src/http/sandbox/sandbox.format.js';

describe('sandbox page helpers', () => {
  it('draws a bank badge from its initials, leaving out "Bank", "of" and the like', () => {
    expect(initials('Khan Bank')).toBe('K');
    expect(initials('Trade and Development Bank')).toBe('TD');
    expect(initials('Bank of')).toBe('BO');
    expect(initials('')).toBe('?');
    const svg = decodeURIComponent(logoSrc('State Bank <3', 1).replace('data:image/svg+xml,', ''));
    expect(svg).toContain('>S&#60;<');
    expect(svg).toContain('fill="#15803d"');
  });

  it('refuses links that would run in the page', () => {
    expect(safeLink('khanbank://q?qPay_QRcode=x')).toBe('khanbank://q?qPay_QRcode=x');
    expect(safeLink(' JavaScript:alert(1)')).toBe('#');
    expect(safeLink('data:text/html,x')).toBe('#');
  });

  it('reads the remaining quota from the RateLimit header', () => {
    expect(quotaText('"per-second";r=4;t=1, "per-minute";r=59;t=60')).toBe('quota left: per-second 4 · per-minute 59');
    expect(quotaText(null)).toBe('');
    expect(quotaText('garbage')).toBe('');
  });

  it('knows what a payment\'s outcome makes of its invoice, by the invoice transitions', () => {
    const now = new Date('2025-06-01T00:00:00Z');
    const due = (iso: string | null) => ({ dueDate: iso, status: 'paid' as const });
    expect(impliedInvoiceStatus({ status: 'open', dueDate: null }, 'confirmed', now)).toBe('paid');
    expect(impliedInvoiceStatus(due('2099-01-01T00:00:00Z'), 'canceled', now)).toBe('open');
    expect(impliedInvoiceStatus(due('2025-01-01T00:00:00Z'), 'canceled', now)).toBe('overdue');
    expect(impliedInvoiceStatus({ status: 'open', dueDate: null }, 'submitted', now)).toBe('open');
  });

  it('makes v4 UUIDs for idempotency keys', () => {
    expect(randomUuid()).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  });
});
