import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { testConfig } from '../helpers/test-config.js';
import { createMemoryRateLimitStore } from '../../src/adapters/rate-limit/memory-rate-limit.store.js';
import { createRedisRateLimitStore } from '../../src/adapters/rate-limit/redis-rate-limit.store.js';
import { windowsFromSettings, type RateLimitStore, type RateLimitWindow } from '../../src/domain/rate-limiter.port.js';

const redisUrl = testConfig().redisUrl;
const LIMITS = { perSecond: 5, perMinute: 60, perHour: 1000 };
const T0 = 1_750_000_000_000;

interface Clocked {
  store: RateLimitStore;
  advance(ms: number): void;
}

type StoreFactory = (windows: RateLimitWindow[], clock: () => number) => RateLimitStore;

let redis: Redis | null = null;
beforeAll(() => {
  if (redisUrl) redis = new Redis(redisUrl, { keyPrefix: `test-${randomBytes(4).toString('hex')}:` });
});
afterAll(async () => {
  await redis?.quit();
});

const factories: [string, boolean, StoreFactory][] = [
  ['memory', false, (windows, clock) => createMemoryRateLimitStore({ windows, clock })],
  ['redis', !redisUrl, (windows, clock) => createRedisRateLimitStore({ client: redis as Redis, windows, clock })],
];

/** A fresh key per test, so one Redis serves every run without cleanup. */
const newKey = () => randomBytes(8).toString('hex');

describe.each(factories)('%s store', (_name, skip, factory) => {
  const needs = skip ? { tags: ['redis'] } : {};
  function clocked(limits = LIMITS): Clocked {
    let now = T0;
    return { store: factory(windowsFromSettings(limits), () => now), advance: (ms) => (now += ms) };
  }

  async function run(store: RateLimitStore, key: string, n: number): Promise<boolean[]> {
    const out: boolean[] = [];
    for (let i = 0; i < n; i++) out.push((await store.check(key)).allowed);
    return out;
  }

  it.skipIf(skip)('lets 5 of a burst of 8 through within one second', needs, async () => {
    const { store, advance } = clocked();
    const key = newKey();
    const results: boolean[] = [];
    for (let i = 0; i < 8; i++) {
      results.push((await store.check(key)).allowed);
      advance(100);
    }
    expect(results).toEqual([true, true, true, true, true, false, false, false]);
  });

  it.skipIf(skip)('reports remaining quota, reset and retry-after', needs, async () => {
    const { store, advance } = clocked();
    const key = newKey();
    const first = await store.check(key);
    expect(first.windows.map((w) => [w.name, w.remaining, w.resetMs])).toEqual([
      ['per-second', 4, 1000],
      ['per-minute', 59, 60_000],
      ['per-hour', 999, 3_600_000],
    ]);
    advance(300);
    await run(store, key, 4);
    const refused = await store.check(key);
    expect(refused.allowed).toBe(false);
    expect(refused.retryAfterMs).toBe(700);
    expect(refused.windows[0]).toMatchObject({ remaining: 0, resetMs: 700 });
    expect(refused.windows[1]).toMatchObject({ remaining: 55 });
  });

  it.skipIf(skip)('does not count refused requests', needs, async () => {
    const { store, advance } = clocked();
    const key = newKey();
    await run(store, key, 5);
    advance(500);
    expect(await run(store, key, 20)).toEqual(Array(20).fill(false));
    advance(500);
    expect(await run(store, key, 6)).toEqual([true, true, true, true, true, false]);
    const minute = (await store.check(key)).windows[1];
    expect(minute?.remaining).toBe(50);
  });

  it.skipIf(skip)('slides instead of resetting at a boundary', needs, async () => {
    const { store, advance } = clocked();
    const key = newKey();
    await run(store, key, 3);
    advance(900);
    expect(await run(store, key, 3)).toEqual([true, true, false]);
    advance(100); // the first three leave the window; the two at +900 ms still count
    expect(await run(store, key, 4)).toEqual([true, true, true, false]);
  });

  it.skipIf(skip)('trips the minute window at request 61', needs, async () => {
    const { store, advance } = clocked();
    const key = newKey();
    for (let i = 0; i < 60; i++) {
      expect((await store.check(key)).allowed).toBe(true);
      advance(250);
    }
    const refused = await store.check(key);
    expect(refused.allowed).toBe(false);
    expect(refused.windows[1]?.remaining).toBe(0);
    expect(refused.retryAfterMs).toBe(60_000 - 60 * 250);
    advance(refused.retryAfterMs);
    expect((await store.check(key)).allowed).toBe(true);
  });

  it.skipIf(skip)('trips the hour window at request 1001', needs, async () => {
    const { store, advance } = clocked();
    const key = newKey();
    let allowed = 0;
    for (let i = 0; i < 1000; i++) {
      if ((await store.check(key)).allowed) allowed++;
      advance(3500);
    }
    expect(allowed).toBe(1000);
    const refused = await store.check(key);
    expect(refused.allowed).toBe(false);
    expect(refused.windows[2]?.remaining).toBe(0);
    expect(refused.retryAfterMs).toBe(3_600_000 - 1000 * 3500);
    advance(refused.retryAfterMs);
    expect((await store.check(key)).allowed).toBe(true);
  });

  it.skipIf(skip)('keeps keys independent', needs, async () => {
    const { store } = clocked();
    const a = newKey();
    const b = newKey();
    expect(await run(store, a, 6)).toEqual([true, true, true, true, true, false]);
    expect(await run(store, b, 5)).toEqual([true, true, true, true, true]);
    expect((await store.check(a)).allowed).toBe(false);
  });

  it.skipIf(skip)('peeks without counting: room until checks fill a window, then the same refusal', needs, async () => {
    const { store, advance } = clocked();
    const key = newKey();
    for (let i = 0; i < 10; i++) expect((await store.peek(key)).allowed).toBe(true);
    const empty = await store.peek(key);
    expect(empty.windows.map((w) => w.remaining)).toEqual([5, 60, 1000]);
    expect(await run(store, key, 5)).toEqual([true, true, true, true, true]);
    advance(400);
    const full = await store.peek(key);
    expect(full.allowed).toBe(false);
    expect(full.retryAfterMs).toBe(600);
    expect(full.windows.map((w) => w.remaining)).toEqual([0, 55, 995]);
    advance(600);
    expect((await store.peek(key)).allowed).toBe(true);
    expect((await store.check(key)).windows[1]?.remaining).toBe(54);
  });

  it.skipIf(skip)('honours configured limits', needs, async () => {
    const { store } = clocked({ perSecond: 2, perMinute: 3, perHour: 4 });
    expect(await run(store, newKey(), 3)).toEqual([true, true, false]);
  });

  it.skipIf(skip)("checks a key against the windows a check names, and keeps what each window counted when they change", needs, async () => {
    const { store, advance } = clocked();
    const key = newKey();
    const seven = windowsFromSettings({ perSecond: 7, perMinute: 100, perHour: 2000 });
    const lower = windowsFromSettings({ perSecond: 5, perMinute: 8, perHour: 1000 });
    expect(await run(store, key, 6)).toEqual([true, true, true, true, true, false]);
    const results: boolean[] = [];
    for (let i = 0; i < 3; i++) results.push((await store.check(key, seven)).allowed);
    expect(results).toEqual([true, true, false]);
    const refused = await store.check(key, seven);
    expect(refused.windows.map((w) => [w.name, w.limit, w.remaining])).toEqual([
      ['per-second', 7, 0],
      ['per-minute', 100, 93],
      ['per-hour', 2000, 1993],
    ]);
    advance(1000);
    // The minute holds 7 already: one more under 8, then the minute is full.
    expect((await store.check(key, lower)).allowed).toBe(true);
    const full = await store.check(key, lower);
    expect(full.allowed).toBe(false);
    expect(full.retryAfterMs).toBe(59_000);
    expect((await store.peek(key, lower)).allowed).toBe(false);
    expect((await store.peek(key)).allowed).toBe(true);
  });

  it.skipIf(skip)('checks a key only while its guard has room, and counts nothing anywhere when the guard refuses', needs, async () => {
    let now = T0;
    const clock = () => now;
    const guard = factory([{ name: 'failures', limit: 2, windowMs: 60_000 }], clock);
    const store = factory(windowsFromSettings(LIMITS), clock);
    const [address, key] = [newKey(), newKey()];
    const first = await store.checkGuarded(guard, address, key);
    expect(first.guard.allowed).toBe(true);
    // A peek at a log nothing was counted in: the whole limit left, nothing to wait for.
    expect(first.guard.windows.map((w) => [w.remaining, w.resetMs])).toEqual([[2, 0]]);
    expect((await store.peek(newKey())).windows.map((w) => [w.remaining, w.resetMs])).toEqual([[5, 0], [60, 0], [1000, 0]]);
    expect(first.decision?.windows.map((w) => w.remaining)).toEqual([4, 59, 999]);
    await guard.check(address);
    now += 1000;
    // A peek counts nothing in the guard: it still has room for one.
    expect((await store.checkGuarded(guard, address, key)).decision?.allowed).toBe(true);
    await guard.check(address);
    const refused = await store.checkGuarded(guard, address, key);
    expect(refused.guard.allowed).toBe(false);
    expect(refused.guard.retryAfterMs).toBe(59_000);
    expect(refused.decision).toBeNull();
    expect((await store.peek(key)).windows.map((w) => w.remaining)).toEqual([4, 58, 998]);
    expect((await guard.peek(address)).windows.map((w) => w.remaining)).toEqual([0]);
  });

  it.skipIf(skip)('counts past its own largest limit when a check names a larger one', needs, async () => {
    const { store } = clocked({ perSecond: 2, perMinute: 3, perHour: 4 });
    const key = newKey();
    const larger = windowsFromSettings({ perSecond: 20, perMinute: 30, perHour: 40 });
    const results: boolean[] = [];
    for (let i = 0; i < 22; i++) results.push((await store.check(key, larger)).allowed);
    expect(results).toEqual([...Array(20).fill(true), false, false]);
    expect((await store.check(key, larger)).windows.map((w) => w.remaining)).toEqual([0, 10, 20]);
  });
});

describe.skipIf(!redisUrl)('redis store on the server clock', { tags: ['redis'] }, () => {
  it('serves a burst of 8 as 5 through and 3 refused', async () => {
    const store = createRedisRateLimitStore({ client: redis as Redis, windows: windowsFromSettings(LIMITS) });
    const key = newKey();
    const results = await Promise.all(Array.from({ length: 8 }, () => store.check(key)));
    expect(results.filter((r) => r.allowed)).toHaveLength(5);
    const refused = results.filter((r) => !r.allowed);
    expect(refused).toHaveLength(3);
    for (const r of refused) expect(r.retryAfterMs).toBeGreaterThan(0);
    for (const r of refused) expect(r.retryAfterMs).toBeLessThanOrEqual(1000);
  });

  it('puts a guarded check in one script when both logs share a connection, and in two calls when they do not', async () => {
    const client = new Redis(redisUrl as string, { keyPrefix: `test-${randomBytes(4).toString('hex')}:` });
    const other = new Redis(redisUrl as string, { keyPrefix: `test-${randomBytes(4).toString('hex')}:` });
    try {
      const sent: string[] = [];
      for (const [name, redis] of [['shared', client], ['apart', other]] as const) {
        const send = redis.sendCommand.bind(redis);
        redis.sendCommand = (command, stream) => {
          sent.push(`${name} ${command.name}`);
          return send(command, stream);
        };
      }
      const failures = [{ name: 'failures', limit: 2, windowMs: 60_000 }];
      const store = createRedisRateLimitStore({ client, windows: windowsFromSettings(LIMITS) });
      const shared = createRedisRateLimitStore({ client, windows: failures, keyPrefix: 'guard:' });
      const apart = createRedisRateLimitStore({ client: other, windows: failures, keyPrefix: 'guard:' });
      // Loads the scripts, so each call below is one EVALSHA.
      await Promise.all([store.check(newKey()), store.checkGuarded(shared, newKey(), newKey()), apart.peek(newKey())]);
      sent.length = 0;
      expect((await store.checkGuarded(shared, newKey(), newKey())).decision?.allowed).toBe(true);
      expect(sent).toEqual(['shared evalsha']);
      sent.length = 0;
      expect((await store.checkGuarded(apart, newKey(), newKey())).decision?.allowed).toBe(true);
      expect(sent).toEqual(['apart evalsha', 'shared evalsha']);
    } finally {
      await Promise.all([client.quit(), other.quit()]);
    }
  });

  it('sets an expiry so idle keys leave Redis', async () => {
    const store = createRedisRateLimitStore({ client: redis as Redis, windows: windowsFromSettings(LIMITS), keyPrefix: 'ttl:' });
    const key = newKey();
    await store.check(key);
    const ttl = await (redis as Redis).pttl(`ttl:${key}`);
    expect(ttl).toBeGreaterThan(3_500_000);
    expect(ttl).toBeLessThanOrEqual(3_600_000);
  });
});
