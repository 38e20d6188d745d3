/**
 * When to try again after a failed try: `delaysMs[n]` is the wait after n tries; past the list,
 * the last delay again (work that must end, such as a payment's checks) or never (a webhook's
 * attempts run out).
 */
export interface Backoff {
  delaysMs: readonly number[];
  afterLast: 'repeat' | 'stop';
}

/** The wait after `triesMade` tries, or null when the backoff has given up. */
export function backoffDelayMs(backoff: Backoff, triesMade: number): number | null {
  const last = backoff.delaysMs.length - 1;
  if (last < 0) return null;
  if (triesMade <= last) return backoff.delaysMs[Math.max(0, triesMade)] ?? null;
  return backoff.afterLast === 'repeat' ? (backoff.delaysMs[last] ?? null) : null;
}

/** A fixed list of waits, then no more tries. */
export function listBackoff(delaysMs: readonly number[]): Backoff {
  return { delaysMs, afterLast: 'stop' };
}

/** Doublings past 2^30 are long capped; the bound keeps the list finite. */
const MAX_DOUBLINGS = 30;

/**
 * `intervalMs` for the first `fastTries` tries, then doubling, capped at `maxDelayMs`, for ever:
 * listed up to the cap, which then repeats.
 */
export function doublingBackoff(opts: { intervalMs: number; fastTries: number; maxDelayMs: number }): Backoff {
  const cap = Math.max(opts.maxDelayMs, opts.intervalMs);
  const delaysMs: number[] = [];
  for (let tries = 0; ; tries++) {
    const doublings = Math.min(Math.max(0, tries - opts.fastTries), MAX_DOUBLINGS);
    const delay = Math.min(opts.intervalMs * 2 ** doublings, cap);
    delaysMs.push(delay);
    if (delay >= cap || doublings >= MAX_DOUBLINGS) return { delaysMs, afterLast: 'repeat' };
  }
}
