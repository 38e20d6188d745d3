import { describe, expect, it } from 'vitest';
import { entriesById, judgeEntry } from '../../src/domain/reconciliation.js';

describe('judging a settlement entry against the payment it names', () => {
  it.each([
    [null, '100', { matched: false, autoConfirm: false, discrepancies: ['missing_locally'] }],
    [{ status: 'confirmed', amount: '100.00' }, '100', { matched: true, autoConfirm: false, discrepancies: [] }],
    [{ status: 'confirmed', amount: '100' }, '99.99', { matched: false, autoConfirm: false, discrepancies: ['amount_mismatch'] }],
    [{ status: 'submitted', amount: '100' }, '100', { matched: false, autoConfirm: true, discrepancies: [] }],
    [{ status: 'submitted', amount: '100' }, '50', { matched: false, autoConfirm: true, discrepancies: ['amount_mismatch'] }],
    [{ status: 'canceled', amount: '100' }, '100', { matched: false, autoConfirm: false, discrepancies: ['settled_but_canceled'] }],
    [{ status: 'failed', amount: '100' }, '100', { matched: false, autoConfirm: false, discrepancies: ['settled_but_failed'] }],
    [{ status: 'pending', amount: '100' }, '100', { matched: false, autoConfirm: false, discrepancies: ['missing_locally'] }],
  ] as const)('%j settled for %s', (local, amount, verdict) => {
    expect(judgeEntry(local, amount)).toEqual(verdict);
  });

  it('sums an id listed twice, so a double settlement is an amount mismatch', () => {
    const byId = entriesById([
      { paymentId: 'a', amount: '100.25' },
      { paymentId: 'b', amount: '5' },
      { paymentId: 'a', amount: '100.25' },
    ]);
    expect(byId.get('a')?.amount).toBe('200.5');
    expect(byId.get('b')?.amount).toBe('5');
    expect(judgeEntry({ status: 'confirmed', amount: '100.25' }, byId.get('a')?.amount ?? '').discrepancies).toEqual(['amount_mismatch']);
  });
});
