const INITIAL_CAPACITY = 8;

/**
 * Timestamps of one key's accepted requests, oldest first, in a ring buffer that grows on demand
 * up to `maxCapacity`. Counting a window is a binary search, so a check costs O(log n) and no
 * allocation once the buffer has grown.
 */
export class SlidingLog {
  private times: Float64Array;
  private head = 0;
  private count = 0;
  private maxCapacity: number;

  constructor(maxCapacity: number) {
    this.maxCapacity = Math.max(1, maxCapacity);
    this.times = new Float64Array(Math.min(INITIAL_CAPACITY, this.maxCapacity));
  }

  /** Lets the log grow to a larger limit's count; a smaller one keeps what the log holds. */
  raiseCapacity(maxCapacity: number): void {
    if (maxCapacity > this.maxCapacity) this.maxCapacity = maxCapacity;
  }

  get size(): number {
    return this.count;
  }

  /** The i-th oldest timestamp (0 = oldest). */
  at(i: number): number {
    return this.times[(this.head + i) % this.times.length] ?? Number.NaN;
  }

  newest(): number | null {
    return this.count === 0 ? null : this.at(this.count - 1);
  }

  /** Forgets entries at or before `cutoffMs`: no window can count them any more. */
  trim(cutoffMs: number): void {
    while (this.count > 0 && this.at(0) <= cutoffMs) {
      this.head = (this.head + 1) % this.times.length;
      this.count--;
    }
  }

  /** Index of the first entry strictly after `sinceMs` (== size when there is none). */
  firstAfter(sinceMs: number): number {
    let lo = 0;
    let hi = this.count;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.at(mid) <= sinceMs) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /** Appends a timestamp; one older than the newest entry (the wall clock stepped back) is clamped to keep the log sorted. */
  push(timeMs: number): void {
    if (this.count === this.times.length) this.grow();
    const newest = this.newest();
    const t = newest !== null && timeMs < newest ? newest : timeMs;
    this.times[(this.head + this.count) % this.times.length] = t;
    this.count++;
  }

  private grow(): void {
    if (this.times.length >= this.maxCapacity) {
      // Callers never push past their largest limit; dropping the oldest keeps memory bounded regardless.
      this.head = (this.head + 1) % this.times.length;
      this.count--;
      return;
    }
    const next = new Float64Array(Math.min(this.times.length * 2, this.maxCapacity));
    for (let i = 0; i < this.count; i++) next[i] = this.at(i);
    this.times = next;
    this.head = 0;
  }
}
