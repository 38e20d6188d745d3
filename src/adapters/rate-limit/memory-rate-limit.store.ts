import { SlidingLog } from '../../domain/sliding-log.js';
import {
  checkAfterPeek,
  largestLimit,
  longestWindowMs,
  toDecision,
  type RateLimitDecision,
  type RateLimitStore,
  type RateLimitWindow,
  type WindowCount,
} from '../../domain/rate-limiter.port.js';

export interface MemoryStoreOptions {
  /** The windows a check is counted against when it names none. */
  windows: RateLimitWindow[];
  /** Milliseconds since the epoch; injectable so tests cross windows without waiting. */
  clock?: () => number;
}

const SWEEP_EVERY_MS = 60_000;

/** What a check needs of its windows beyond the windows themselves, worked out once per array. */
interface WindowFacts {
  longest: number;
  capacity: number;
  nothingCounted: WindowCount[];
}

function factsOf(windows: readonly RateLimitWindow[]): WindowFacts {
  return {
    longest: longestWindowMs(windows),
    capacity: largestLimit(windows),
    nothingCounted: windows.map(() => ({ count: 0, oldestMs: null })),
  };
}

/**
 * A true sliding log per key in process memory: exact, but each instance counts only its own
 * traffic, so it is the single-instance default (the Redis store shares state across instances).
 */
export function createMemoryRateLimitStore(opts: MemoryStoreOptions): RateLimitStore {
  const clock = opts.clock ?? Date.now;
  const facts = new WeakMap<readonly RateLimitWindow[], WindowFacts>();
  const logs = new Map<string, SlidingLog>();
  // Idle keys are swept after the longest window any check has used.
  let sweepAfterMs = longestWindowMs(opts.windows);
  let lastSweepMs = clock();

  function factsFor(windows: readonly RateLimitWindow[]): WindowFacts {
    let known = facts.get(windows);
    if (!known) {
      known = factsOf(windows);
      facts.set(windows, known);
      sweepAfterMs = Math.max(sweepAfterMs, known.longest);
    }
    return known;
  }

  /** Drops idle keys so memory follows the active keys, not every key ever seen. */
  function sweep(nowMs: number): void {
    if (nowMs - lastSweepMs < SWEEP_EVERY_MS) return;
    lastSweepMs = nowMs;
    for (const [key, log] of logs) {
      const newest = log.newest();
      if (newest === null || newest <= nowMs - sweepAfterMs) logs.delete(key);
    }
  }

  function logFor(key: string, capacity: number): SlidingLog {
    let log = logs.get(key);
    if (!log) {
      log = new SlidingLog(capacity);
      logs.set(key, log);
    } else {
      log.raiseCapacity(capacity);
    }
    return log;
  }

  function decide(key: string, windows: readonly RateLimitWindow[], record: boolean): RateLimitDecision {
    const { longest, capacity, nothingCounted } = factsFor(windows);
    const nowMs = clock();
    sweep(nowMs);
    // A peek at a key nothing was counted for (an address with no failed authentication, the
    // usual case on every request) allocates no log.
    if (!record && !logs.has(key)) return toDecision(windows, nowMs, true, 0, nothingCounted);
    const log = logFor(key, capacity);
    log.trim(nowMs - longest);
    const firsts = windows.map((w) => log.firstAfter(nowMs - w.windowMs));
    const allowed = windows.every((w, i) => log.size - (firsts[i] ?? 0) < w.limit);
    let retryAfterMs = 0;
    if (allowed) {
      if (record) log.push(nowMs);
    } else {
      windows.forEach((w, i) => {
        const first = firsts[i] ?? 0;
        const over = log.size - first - w.limit;
        if (over >= 0) retryAfterMs = Math.max(retryAfterMs, log.at(first + over) + w.windowMs - nowMs);
      });
    }
    const counts: WindowCount[] = firsts.map((first) => ({
      count: log.size - first,
      oldestMs: first < log.size ? log.at(first) : null,
    }));
    return toDecision(windows, nowMs, allowed, retryAfterMs, counts);
  }

  return {
    kind: 'memory',
    check: async (key, windows = opts.windows) => decide(key, windows, true),
    peek: async (key, windows = opts.windows) => decide(key, windows, false),
    checkGuarded: (guard, guardKey, key, windows = opts.windows) => checkAfterPeek(guard, guardKey, async () => decide(key, windows, true)),
    async close() {
      logs.clear();
    },
  };
}
