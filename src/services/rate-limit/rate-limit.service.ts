import type { RateLimitDecision, RateLimitStore, RateLimitWindow } from '../../domain/rate-limiter.port.js';

/**
 * `decided`: the store answered. `bypassed`: it failed and the limiter fails open (request goes on
 * unlimited). `unavailable`: it failed and the limiter fails closed (request is refused).
 */
export type RateLimitOutcome =
  | { kind: 'decided'; decision: RateLimitDecision }
  | { kind: 'bypassed' }
  | { kind: 'unavailable' };

/** Structurally a prom-client Counter, so the metrics registry can be wired in without this module owning it. */
export interface IncCounter {
  inc(): void;
}

export interface RateLimitLog {
  warn(obj: object, msg: string): void;
}

export interface RateLimitServiceOptions {
  store: RateLimitStore;
  windows: RateLimitWindow[];
  failOpen: boolean;
  log: RateLimitLog;
  counters?: { rejections?: IncCounter; storeErrors?: IncCounter };
}

const LOG_EVERY_MS = 10_000;

export function createRateLimitService(opts: RateLimitServiceOptions) {
  let lastLogMs = 0;
  let suppressed = 0;

  /** An outage fails every request; one line per interval (with the count) keeps the log readable. */
  function logStoreError(err: unknown): void {
    const nowMs = Date.now();
    if (nowMs - lastLogMs < LOG_EVERY_MS) {
      suppressed++;
      return;
    }
    opts.log.warn(
      { err, store: opts.store.kind, failOpen: opts.failOpen, suppressedSinceLast: suppressed },
      opts.failOpen ? 'rate-limit store failed; request allowed (fail-open)' : 'rate-limit store failed; request refused (fail-closed)',
    );
    lastLogMs = nowMs;
    suppressed = 0;
  }

  async function decide(ask: () => Promise<RateLimitDecision>, refuses: boolean): Promise<RateLimitOutcome> {
    try {
      const decision = await ask();
      if (refuses && !decision.allowed) opts.counters?.rejections?.inc();
      return { kind: 'decided', decision };
    } catch (err) {
      opts.counters?.storeErrors?.inc();
      logStoreError(err);
      return failed();
    }
  }

  /** What a failed store means for a request under this limit. */
  const failed = (): RateLimitOutcome => (opts.failOpen ? { kind: 'bypassed' } : { kind: 'unavailable' });

  return {
    /** The windows a check is counted against when it names none. */
    windows: opts.windows,
    store: opts.store,

    /** Counts a request and decides it: refused when a window is full. */
    check: (key: string, windows: readonly RateLimitWindow[] = opts.windows) => decide(() => opts.store.check(key, windows), true),

    /** Decides a request without counting it: refused when a window is already full. */
    peek: (key: string, windows: readonly RateLimitWindow[] = opts.windows) => decide(() => opts.store.peek(key, windows), true),

    /**
     * `guard.peek(guardKey)`, then, when the guard has room, `check(key, windows)`: one round trip
     * when both limits share a Redis. `check` is null when the guard refused (nothing was counted).
     * A failed store fails each limit its own way.
     */
    async checkGuarded(guard: { store: RateLimitStore; failed(): RateLimitOutcome }, guardKey: string, key: string, windows: readonly RateLimitWindow[] = opts.windows): Promise<{ guard: RateLimitOutcome; check: RateLimitOutcome | null }> {
      try {
        const { guard: peeked, decision } = await opts.store.checkGuarded(guard.store, guardKey, key, windows);
        if (!peeked.allowed || (decision && !decision.allowed)) opts.counters?.rejections?.inc();
        return { guard: { kind: 'decided', decision: peeked }, check: decision ? { kind: 'decided', decision } : null };
      } catch (err) {
        opts.counters?.storeErrors?.inc();
        logStoreError(err);
        return { guard: guard.failed(), check: failed() };
      }
    },

    failed,

    /** Counts an event that already happened (a failed authentication): nothing is refused. */
    record: (key: string) => decide(() => opts.store.check(key), false),

    close: () => opts.store.close(),
  };
}

export type RateLimitService = ReturnType<typeof createRateLimitService>;
