import { describe, expect, it } from 'vitest';
import { backoffDelayMs, doublingBackoff, listBackoff } from '../../src/domain/backoff.js';

describe('backoff', () => {
  it('follows a list of waits and then gives up', () => {
    const schedule = listBackoff([0, 5000, 300_000]);
    expect([0, 1, 2, 3, 10].map((n) => backoffDelayMs(schedule, n))).toEqual([0, 5000, 300_000, null, null]);
  });

  it('keeps the interval for the first tries, then doubles up to the cap, which repeats', () => {
    const backoff = doublingBackoff({ intervalMs: 2000, fastTries: 3, maxDelayMs: 30_000 });
    expect([0, 3, 4, 5, 6, 7, 8, 50, 10_000].map((n) => backoffDelayMs(backoff, n))).toEqual([2000, 2000, 4000, 8000, 16_000, 30_000, 30_000, 30_000, 30_000]);
  });

  it('never waits less than the interval, even with a cap below it', () => {
    const backoff = doublingBackoff({ intervalMs: 5000, fastTries: 0, maxDelayMs: 1000 });
    expect([0, 1, 100].map((n) => backoffDelayMs(backoff, n))).toEqual([5000, 5000, 5000]);
  });

  it('stays finite for an interval of zero', () => {
    const backoff = doublingBackoff({ intervalMs: 0, fastTries: 2, maxDelayMs: 1000 });
    expect(backoffDelayMs(backoff, 1000)).toBe(0);
    expect(backoff.delaysMs.length).toBeLessThan(40);
  });

  it('gives up at once with no waits at all', () => {
    expect(backoffDelayMs(listBackoff([]), 0)).toBeNull();
  });
});
