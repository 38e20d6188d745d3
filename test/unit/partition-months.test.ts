import { describe, expect, it } from 'vitest';
import { addMonths, cutoverMonth, expiredPartitions, missingMonths, monthPartitionName, monthStart, parsePartitionBound } from '../../src/domain/partition-months.js';

const at = (iso: string) => new Date(iso);

describe('monthly partition bounds', () => {
  it('names and bounds whole UTC months, across a year end', () => {
    expect(monthStart(at('2026-12-31T23:59:59.999Z'))).toEqual(at('2026-12-01T00:00:00Z'));
    expect(addMonths(at('2026-12-01T00:00:00Z'), 1)).toEqual(at('2027-01-01T00:00:00Z'));
    expect(addMonths(at('2026-01-01T00:00:00Z'), -1)).toEqual(at('2025-12-01T00:00:00Z'));
    expect(monthPartitionName('events', at('2027-01-01T00:00:00Z'))).toBe('events_p202701');
  });

  it('puts the cutover on the first month boundary at least the margin ahead', () => {
    const week = 7 * 24 * 3600 * 1000;
    expect(cutoverMonth(at('2026-12-03T10:00:00Z'), week)).toEqual(at('2027-01-01T00:00:00Z'));
    // Within a week of the month's end: the boundary after the next.
    expect(cutoverMonth(at('2026-12-28T10:00:00Z'), week)).toEqual(at('2027-02-01T00:00:00Z'));
  });

  it('finds the months no partition covers, leaving out those the legacy partition reaches into', () => {
    const legacy = { name: 'events_legacy', from: null, to: at('2027-01-01T00:00:00Z') };
    const jan = { name: 'events_p202701', from: at('2027-01-01T00:00:00Z'), to: at('2027-02-01T00:00:00Z') };
    expect(missingMonths([legacy, jan], at('2026-12-01T00:00:00Z'), 3)).toEqual([at('2027-02-01T00:00:00Z')]);
    expect(missingMonths([], at('2026-12-01T00:00:00Z'), 2)).toEqual([at('2026-12-01T00:00:00Z'), at('2027-01-01T00:00:00Z')]);
  });

  it('counts a partition expired only when it ends at or before the cut-off, oldest first', () => {
    const parts = [
      { name: 'b', from: at('2026-08-01T00:00:00Z'), to: at('2026-09-01T00:00:00Z') },
      { name: 'a', from: at('2026-07-01T00:00:00Z'), to: at('2026-08-01T00:00:00Z') },
      { name: 'c', from: at('2026-09-01T00:00:00Z'), to: at('2026-10-01T00:00:00Z') },
      { name: 'legacy', from: null, to: at('2026-07-01T00:00:00Z') },
    ];
    expect(expiredPartitions(parts, at('2026-09-01T00:00:00Z')).map((p) => p.name)).toEqual(['legacy', 'a', 'b']);
  });

  it('reads the bounds PostgreSQL prints in any session time zone, and refuses what it cannot read', () => {
    expect(parsePartitionBound('p', "FOR VALUES FROM ('2026-12-01 00:00:00+00') TO ('2027-01-01 00:00:00+00')")).toEqual({
      name: 'p',
      from: at('2026-12-01T00:00:00Z'),
      to: at('2027-01-01T00:00:00Z'),
    });
    expect(parsePartitionBound('p', "FOR VALUES FROM ('2026-12-01 08:00:00+08') TO ('2027-01-01 05:30:00+05:30')")).toEqual({
      name: 'p',
      from: at('2026-12-01T00:00:00Z'),
      to: at('2027-01-01T00:00:00Z'),
    });
    expect(parsePartitionBound('legacy', "FOR VALUES FROM (MINVALUE) TO ('2027-01-01 00:00:00+00')")).toEqual({ name: 'legacy', from: null, to: at('2027-01-01T00:00:00Z') });
    expect(parsePartitionBound('d', 'DEFAULT')).toBeNull();
    expect(parsePartitionBound('x', "FOR VALUES FROM ('someday') TO ('2027-01-01 00:00:00+00')")).toBeNull();
  });
});
