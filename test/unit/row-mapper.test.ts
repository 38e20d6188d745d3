import { describe, expect, it } from 'vitest';
import { camelRow, isoDates } from '../../src/db/rows/row.mapper.js';

describe('row mapper', () => {
  it('copies the named columns under their camelCase names, and nothing else', () => {
    const toView = camelRow(['id', 'finance_day', 'last_status_code', 'v2_key']);
    const row = { id: 'a', finance_day: '2025-01-02', last_status_code: null, v2_key: 1, secret_ciphertext: 'never' };
    expect(toView(row)).toStrictEqual({ id: 'a', financeDay: '2025-01-02', lastStatusCode: null, v2Key: 1 });
    expect(Object.keys(toView(row))).toEqual(['id', 'financeDay', 'lastStatusCode', 'v2Key']);
  });

  it('shows times as ISO strings and leaves every other value as it is', () => {
    const at = new Date('2025-01-02T03:04:05.678Z');
    const sources = [{ at: 'kept' }];
    expect(isoDates({ createdAt: at, resolvedAt: null, amount: '10.50', sources })).toStrictEqual({
      createdAt: '2025-01-02T03:04:05.678Z',
      resolvedAt: null,
      amount: '10.50',
      sources,
    });
  });
});
