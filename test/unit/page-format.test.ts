import { describe, expect, it } from 'vitest';
import { compactJson, formatFinanceDay, formatLocalTime, formatTugrik, queryString, shiftFinanceDay, shortId, timeBound, timezoneNote, financeDayLabel } from '../../src/http/page-ui/page-format.js';

describe('page formatting', () => {
  it('shows moments in local time as YYYY-MM-DD, with or without seconds', () => {
    const local = new Date(2025, 0, 2, 3, 4, 5).toISOString();
    expect(formatLocalTime(local)).toBe('2025-01-02 03:04:05');
    expect(formatLocalTime(local, false)).toBe('2025-01-02 03:04');
    expect(formatLocalTime(null)).toBe('—');
    expect(formatLocalTime('not a time')).toBe('not a time');
  });

  it('shows a due date as its day in Mongolian time', () => {
    expect(formatFinanceDay('2099-12-31T15:59:59Z')).toBe('2099-12-31');
    expect(formatFinanceDay('2099-12-31T16:00:00Z')).toBe('2100-01-01');
    expect(formatFinanceDay(undefined)).toBe('—');
  });

  it('writes tugrik amounts with or without fixed decimals', () => {
    expect(formatTugrik(12000.5)).toBe('12,000.50 ₮');
    expect(formatTugrik(12000.5, false)).toBe('12,000.5 ₮');
    expect(formatTugrik(null)).toBe('—');
    expect(shortId('169eb6f5-0000-4000-8000-000000000000')).toBe('169eb6f5');
    expect(compactJson({ a: 1 })).toBe('{"a":1}');
    expect(compactJson(null)).toBe('');
  });

  it('names the viewer\'s offset from UTC', () => {
    expect(timezoneNote(-480)).toBe('times in local time (UTC+08:00)');
    expect(timezoneNote(150)).toBe('times in local time (UTC-02:30) · finance days in Ulaanbaatar time (UTC+08:00)');
    expect(timezoneNote(0)).toBe('times in local time (UTC+00:00) · finance days in Ulaanbaatar time (UTC+08:00)');
  });

  it('names the finance day beneath a local time only where the viewer\'s clock is not Ulaanbaatar\'s', () => {
    // 17:30 UTC on 1 March is 01:30 on 2 March in Ulaanbaatar: a viewer in London reads 1 March.
    expect(financeDayLabel('2025-03-01T17:30:00Z', 0)).toBe('finance day 2025-03-02');
    expect(financeDayLabel('2025-03-01T10:00:00Z', 0)).toBe('finance day 2025-03-01');
    expect(financeDayLabel('2025-03-01T17:30:00Z', -480)).toBeNull();
    expect(financeDayLabel(null, 0)).toBeNull();
    expect(financeDayLabel('not a time', 0)).toBeNull();
  });

  it('builds a query string of the filled-in values only', () => {
    expect(queryString({ status: 'open', financeDay: ' ', cursor: null, partnerId: ' p1 ' })).toBe('?status=open&partnerId=p1');
    expect(queryString({ status: '' })).toBe('');
  });

  it('steps finance days, and falls back to today for text that is not one', () => {
    const now = new Date('2025-03-01T18:00:00Z');
    expect(shiftFinanceDay('2025-03-01', -1, now)).toBe('2025-02-28');
    expect(shiftFinanceDay('2024-12-31', 1, now)).toBe('2025-01-01');
    expect(shiftFinanceDay('2025-02-30', 1, now)).toBe('2025-03-02');
  });

  it('reads a search bound: a day as typed, a local time as an instant, anything else refused', () => {
    expect(timeBound(' 2025-03-01 ', 'From')).toBe('2025-03-01');
    expect(timeBound('2025-03-01 08:30', 'From')).toBe(new Date(2025, 2, 1, 8, 30).toISOString());
    expect(timeBound('2025-03-01T08:30:15', 'To')).toBe(new Date(2025, 2, 1, 8, 30, 15).toISOString());
    expect(timeBound('', 'From')).toBe('');
    expect(() => timeBound('yesterday', 'From')).toThrow('From is written YYYY-MM-DD or YYYY-MM-DD HH:mm:ss (local time)');
  });
});
