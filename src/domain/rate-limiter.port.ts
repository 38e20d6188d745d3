/** One sliding window: at most `limit` accepted requests in any `windowMs` span. */
export interface RateLimitWindow {
  /** Policy name sent in the RateLimit-Policy / RateLimit headers. */
  name: string;
  limit: number;
  windowMs: number;
}

/** A window's state right after a check (the checked request included when it was allowed). */
export interface WindowState extends RateLimitWindow {
  remaining: number;
  /** Until the oldest counted request leaves the window and frees one unit; 0 when none is counted. */
  resetMs: number;
}

export interface RateLimitDecision {
  allowed: boolean;
  /** How long until every exceeded window has room again; 0 when allowed. */
  retryAfterMs: number;
  windows: WindowState[];
}

/** Raw result of one atomic check in a store, before it is shaped into a decision. */
export interface WindowCount {
  /** Accepted requests in the window after the check. */
  count: number;
  /** Timestamp of the oldest of them, or null when the window is empty. */
  oldestMs: number | null;
}

/**
 * Per-key limiter state. `check` counts the request against every window at once and records it
 * only when all windows have room, so a refused request never consumes quota. `peek` answers the
 * same question (is there room for one more?) and records nothing: for limits on events known
 * only after the request ran, such as failed authentications.
 *
 * `windows` defaults to the store's own; a key may be checked against other limits from one
 * request to the next (a partner's own limits). One log of times serves every window, so a change
 * of limits keeps what each window already counted. Pass the same array for the same limits: the
 * stores derive what they need from it once per array.
 */
export interface RateLimitStore {
  readonly kind: 'memory' | 'redis';
  check(key: string, windows?: readonly RateLimitWindow[]): Promise<RateLimitDecision>;
  peek(key: string, windows?: readonly RateLimitWindow[]): Promise<RateLimitDecision>;
  /**
   * `guard.peek(guardKey)`, then `check(key, windows)` only when the guard has room: a request
   * refused by the guard is counted nowhere. One atomic step when both logs live in one Redis (a
   * round trip fewer on every request), otherwise the two calls one after the other.
   */
  checkGuarded(guard: RateLimitStore, guardKey: string, key: string, windows?: readonly RateLimitWindow[]): Promise<GuardedDecision>;
  close(): Promise<void>;
}

/** The guard's peek, and the check when the guard let it run (null when the guard refused). */
export interface GuardedDecision {
  guard: RateLimitDecision;
  decision: RateLimitDecision | null;
}

/** checkGuarded as two calls: the guard's peek, then the check if the guard has room. */
export async function checkAfterPeek(
  guard: RateLimitStore,
  guardKey: string,
  check: () => Promise<RateLimitDecision>,
): Promise<GuardedDecision> {
  const peeked = await guard.peek(guardKey);
  return { guard: peeked, decision: peeked.allowed ? await check() : null };
}

export interface RateLimitSettings {
  perSecond: number;
  perMinute: number;
  perHour: number;
}

/** Per-key windows; their names and spans are the same for every partner, only the limits differ. */
export function windowsFromSettings(s: RateLimitSettings): RateLimitWindow[] {
  return [
    { name: 'per-second', limit: s.perSecond, windowMs: 1000 },
    { name: 'per-minute', limit: s.perMinute, windowMs: 60_000 },
    { name: 'per-hour', limit: s.perHour, windowMs: 3_600_000 },
  ];
}

export function longestWindowMs(windows: readonly RateLimitWindow[]): number {
  return windows.reduce((max, w) => Math.max(max, w.windowMs), 0);
}

export function largestLimit(windows: readonly RateLimitWindow[]): number {
  return windows.reduce((max, w) => Math.max(max, w.limit), 0);
}

/** Shapes the counts any store produces into the decision the HTTP layer reports. */
export function toDecision(
  windows: readonly RateLimitWindow[],
  nowMs: number,
  allowed: boolean,
  retryAfterMs: number,
  counts: readonly WindowCount[],
): RateLimitDecision {
  return {
    allowed,
    retryAfterMs: allowed ? 0 : Math.max(retryAfterMs, 1),
    // Explicit properties rather than a spread: this runs on every request and spread is several times slower.
    windows: windows.map((w, i) => {
      const count = counts[i]?.count ?? 0;
      const oldestMs = counts[i]?.oldestMs ?? null;
      return {
        name: w.name,
        limit: w.limit,
        windowMs: w.windowMs,
        remaining: Math.max(0, w.limit - count),
        resetMs: oldestMs === null ? 0 : Math.max(0, oldestMs + w.windowMs - nowMs),
      };
    }),
  };
}
