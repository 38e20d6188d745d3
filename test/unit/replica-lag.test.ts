import { describe, expect, it } from 'vitest';
import { createLagTracker, lsnValue } from '../../src/db/replica-reads.js';

describe('a WAL position', () => {
  it('orders as PostgreSQL orders it, the high word first', () => {
    expect(lsnValue('0/16B3748') < lsnValue('0/16B3750')).toBe(true);
    expect(lsnValue('1/0') > lsnValue('0/FFFFFFFF')).toBe(true);
    expect(lsnValue('16/B374D848')).toBe((0x16n << 32n) | 0xb374d848n);
    expect(() => lsnValue('16-B374')).toThrow(/not a WAL position/);
  });
});

describe('the replay lag', () => {
  it('is none while the replica has replayed what the primary held, however long nothing was written', () => {
    const lag = createLagTracker();
    expect(lag.observe(0, 100n, 100n)).toBe(0);
    expect(lag.observe(60_000, 100n, 100n)).toBe(0);
    // A write after a quiet minute, replayed within the probe: no lag, as there is none.
    expect(lag.observe(60_500, 180n, 180n)).toBe(0);
  });

  it('grows from the first position the replica has not replayed, and ends once it has', () => {
    const lag = createLagTracker();
    expect(lag.observe(1000, 200n, 150n)).toBe(0);
    expect(lag.observe(1500, 260n, 150n)).toBe(500);
    expect(lag.observe(2500, 300n, 150n)).toBe(1500);
    // Replayed past the first sample, not the second: behind by what the primary held at 1500.
    expect(lag.observe(3000, 300n, 210n)).toBe(1500);
    expect(lag.observe(3500, 300n, 300n)).toBe(0);
  });

  it('keeps the oldest unreplayed position however long replay stays stopped', () => {
    const lag = createLagTracker();
    for (let i = 0; i < 5000; i++) lag.observe(i * 10, BigInt(1000 + i), 500n);
    expect(lag.observe(50_000, 9000n, 500n)).toBe(50_000);
  });
});
