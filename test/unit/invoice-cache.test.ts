import { describe, expect, it } from 'vitest';
import { createInvoiceCache } from '../../src/adapters/invoice-cache.js';
import type { InvoiceRow } from '../../src/db/repositories/invoice.repository.js';

function row(id: string, status = 'open'): InvoiceRow {
  const at = new Date('2025-01-01T00:00:00Z');
  return {
    id,
    source: 'mof',
    ref_num: `R-${id}`,
    description: 'x',
    amount: '100.00',
    status,
    due_date: null,
    issued_at: null,
    vehicle_no: null,
    tax_ref: null,
    payer_register: null,
    payer_name: null,
    payee_id: 'P',
    payee_name: 'Payee',
    year: null,
    created_at: at,
    updated_at: at,
  } as InvoiceRow;
}

describe('invoice cache', () => {
  it("takes the writer's fresh copy in place of an older one, keeping who may read it", () => {
    const cache = createInvoiceCache({ ttlMs: 60_000, maxEntries: 100 });
    cache.remember('p1', [row('a')], cache.mark());
    const mark = cache.mark();
    const paid = { ...row('a', 'paid'), updated_at: new Date('2025-01-02T00:00:00Z') };
    cache.refresh([paid, row('b')], mark);
    expect(cache.get('p1', 'a')?.status).toBe('paid');
    expect(cache.get('p1', 'b')).toBeUndefined();
    cache.remember('p2', [paid], mark);
    expect(cache.get('p2', 'a')?.status).toBe('paid');
  });

  it('drops a copy forgotten while the writer read it back', () => {
    const cache = createInvoiceCache({ ttlMs: 60_000, maxEntries: 100 });
    const mark = cache.mark();
    cache.forget(['a']);
    cache.remember('p1', [row('a')], cache.mark());
    cache.refresh([{ ...row('a', 'paid'), updated_at: new Date('2025-01-02T00:00:00Z') }], mark);
    expect(cache.get('p1', 'a')).toBeUndefined();
  });

  it('answers only the partner the row was remembered for', () => {
    const cache = createInvoiceCache({ ttlMs: 60_000, maxEntries: 100 });
    cache.remember('p1', [row('a')], cache.mark());
    expect(cache.get('p1', 'a')?.id).toBe('a');
    expect(cache.get('p2', 'a')).toBeUndefined();
  });

  it('forgets a changed row for every partner', () => {
    const cache = createInvoiceCache({ ttlMs: 60_000, maxEntries: 100 });
    cache.remember('p1', [row('a')], cache.mark());
    cache.remember('p2', [row('a')], cache.mark());
    cache.forget(['a']);
    expect(cache.get('p1', 'a')).toBeUndefined();
    expect(cache.get('p2', 'a')).toBeUndefined();
  });

  it('does not remember a row read before a change that was forgotten during the read', () => {
    const cache = createInvoiceCache({ ttlMs: 60_000, maxEntries: 100 });
    const mark = cache.mark();
    cache.forget(['a']);
    cache.remember('p1', [row('a', 'open'), row('b')], mark);
    expect(cache.get('p1', 'a')).toBeUndefined();
    expect(cache.get('p1', 'b')?.id).toBe('b');
    cache.remember('p1', [row('a', 'paid')], cache.mark());
    expect(cache.get('p1', 'a')?.status).toBe('paid');
  });

  it('keeps at most maxEntries rows', () => {
    const cache = createInvoiceCache({ ttlMs: 60_000, maxEntries: 2 });
    cache.remember('p1', [row('a'), row('b'), row('c')], cache.mark());
    expect(cache.get('p1', 'a')).toBeUndefined();
    expect(cache.get('p1', 'c')?.id).toBe('c');
  });

  it('caches nothing when the TTL is 0', () => {
    const cache = createInvoiceCache({ ttlMs: 0, maxEntries: 100 });
    cache.remember('p1', [row('a')], cache.mark());
    expect(cache.get('p1', 'a')).toBeUndefined();
  });
});
