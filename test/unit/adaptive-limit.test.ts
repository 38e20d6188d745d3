import { describe, expect, it } from 'vitest';
import { createAdaptiveLimit, type AdaptiveLimit } from '../../src/domain/adaptive-limit.js';

/** Answers `rounds` rounds of calls, each round as many calls as the limit allows, all in flight together. */
function drive(limiter: AdaptiveLimit, rounds: number, latencyAt: (inFlight: number) => number, ok: (call: number) => boolean = () => true): void {
  let call = 0;
  for (let r = 0; r < rounds; r++) {
    const n = limiter.limit();
    for (let i = 1; i <= n; i++) limiter.record({ latencyMs: latencyAt(i), ok: ok(call++), inFlight: i });
  }
}

/** Answers `calls` calls of a pool that keeps every slot busy: each call starts with the limit's worth in flight. */
function saturate(limiter: AdaptiveLimit, calls: number, latencyAt: (inFlight: number) => number): void {
  for (let i = 0; i < calls; i++) {
    const inFlight = limiter.limit();
    limiter.record({ latencyMs: latencyAt(inFlight), ok: true, inFlight });
  }
}

describe('adaptive limit', () => {
  it('starts at the floor', () => {
    expect(createAdaptiveLimit({ min: 4, max: 32 }).limit()).toBe(4);
  });

  it('grows to the cap while latency holds steady however many calls are in flight', () => {
    const limiter = createAdaptiveLimit({ min: 4, max: 32 });
    drive(limiter, 10, () => 1500);
    const grown = limiter.limit();
    expect(grown).toBeGreaterThan(8);
    drive(limiter, 40, () => 1500);
    expect(limiter.limit()).toBe(32);
  });

  it('settles well below the cap when latency rises with the calls in flight', () => {
    const limiter = createAdaptiveLimit({ min: 4, max: 64 });
    saturate(limiter, 2000, (inFlight) => 20 + 50 * inFlight);
    expect(limiter.limit()).toBeGreaterThan(4);
    expect(limiter.limit()).toBeLessThanOrEqual(16);
    // The same pool at a latency that load does not move runs into the cap.
    const steady = createAdaptiveLimit({ min: 4, max: 64 });
    saturate(steady, 2000, () => 20 + 50 * 4);
    expect(steady.limit()).toBe(64);
  });

  it('shrinks when latency climbs above its baseline with the calls in flight', () => {
    const limiter = createAdaptiveLimit({ min: 4, max: 64 });
    drive(limiter, 30, () => 100);
    const before = limiter.limit();
    expect(before).toBeGreaterThan(20);
    drive(limiter, 5, (inFlight) => 100 + 50 * inFlight);
    expect(limiter.limit()).toBeLessThan(before / 2);
  });

  it('relearns its baseline once cut back to the floor, then grows again', () => {
    const limiter = createAdaptiveLimit({ min: 4, max: 64 });
    drive(limiter, 30, () => 20);
    drive(limiter, 30, () => 1500);
    expect(limiter.state().baselineMs).toBeGreaterThan(500);
    drive(limiter, 20, () => 1500);
    expect(limiter.limit()).toBe(64);
  });

  it('cuts the limit on failures, down to the floor and no further', () => {
    const limiter = createAdaptiveLimit({ min: 2, max: 32 });
    drive(limiter, 40, () => 50);
    expect(limiter.limit()).toBe(32);
    limiter.record({ latencyMs: 5000, ok: false, inFlight: 32 });
    expect(limiter.limit()).toBeLessThan(32);
    for (let i = 0; i < 30; i++) limiter.record({ latencyMs: 5000, ok: false, inFlight: 1 });
    expect(limiter.limit()).toBe(2);
  });

  it('does not grow while most of its slots are idle', () => {
    const limiter = createAdaptiveLimit({ min: 4, max: 32 });
    drive(limiter, 5, () => 100);
    const reached = limiter.limit();
    for (let i = 0; i < 200; i++) limiter.record({ latencyMs: 100, ok: true, inFlight: 1 });
    expect(limiter.limit()).toBe(reached);
  });

  it('takes noise within its jitter allowance for steady latency', () => {
    const limiter = createAdaptiveLimit({ min: 4, max: 32 });
    drive(limiter, 40, (inFlight) => (inFlight % 3 === 0 ? 40 : 5));
    expect(limiter.limit()).toBe(32);
  });
});
