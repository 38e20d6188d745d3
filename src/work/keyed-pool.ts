import { createKeyedSlots, type KeyedSlots } from './keyed-slots.js';

/**
 * Runs tasks concurrently with a cap per key (a ministry system, a webhook endpoint) and a cap
 * overall, so a key whose tasks hang or fail uses up only its own slots and never another key's.
 */
export interface KeyedPool {
  /** How many more tasks `key` may start now (bounded by both caps). */
  available(key: string): number;
  /** Free slots overall. */
  free(): number;
  /** Slots of `key` in use now: its tasks here, and work outside the pool when the slots are shared. */
  running(key: string): number;
  /**
   * Keeps up to `n` of `key`'s free slots for this pool's next tasks of `key`, so work outside the
   * pool sharing its slots cannot take them while a claim is under way; returns how many it kept.
   */
  hold(key: string, n: number): number;
  /** Gives back every held slot no task has taken. */
  dropHolds(): void;
  /** Starts the task in a held slot of `key`, else a free one; false when it has neither. */
  tryRun(key: string, task: () => Promise<unknown>): boolean;
  /** Resolves once every task started so far has finished. */
  idle(): Promise<void>;
}

export interface KeyedPoolOptions {
  /**
   * A fixed cap per key, one read each time a task may start (a limit that adapts), or slots this
   * pool shares with work that runs outside it (a partner's live status check).
   */
  perKey: number | ((key: string) => number) | KeyedSlots;
  total: number;
  onError: (err: unknown, key: string) => void;
  /** Called once a task's slot is free again (its key's count already lowered). */
  onFree?: (key: string) => void;
}

export function createKeyedPool(opts: KeyedPoolOptions): KeyedPool {
  const slots = typeof opts.perKey === 'object' ? opts.perKey : createKeyedSlots(opts.perKey);
  const inFlight = new Set<Promise<void>>();
  const held = new Map<string, (() => void)[]>();
  let heldTotal = 0;

  const free = () => Math.max(0, opts.total - inFlight.size - heldTotal);
  const available = (key: string) => Math.min(free(), slots.available(key));

  /** A held slot of `key`, else a free one; null when there is neither. */
  function takeSlot(key: string): (() => void) | null {
    const kept = held.get(key)?.pop();
    if (kept) {
      heldTotal -= 1;
      return kept;
    }
    return free() > 0 ? slots.tryTake(key) : null;
  }

  return {
    available,
    free,
    running: (key) => slots.inUse(key),
    hold(key, n) {
      const kept = held.get(key) ?? [];
      let taken = 0;
      for (; taken < n && available(key) > 0; taken += 1) {
        const release = slots.tryTake(key);
        if (!release) break;
        kept.push(release);
        heldTotal += 1;
      }
      held.set(key, kept);
      return taken;
    },
    dropHolds() {
      held.forEach((releases) => releases.forEach((release) => release()));
      held.clear();
      heldTotal = 0;
    },
    tryRun(key, task) {
      const release = takeSlot(key);
      if (!release) return false;
      const done: Promise<void> = Promise.resolve()
        .then(task)
        .then(
          () => undefined,
          (err: unknown) => opts.onError(err, key),
        )
        .finally(() => {
          release();
          inFlight.delete(done);
          opts.onFree?.(key);
        });
      inFlight.add(done);
      return true;
    },
    async idle() {
      while (inFlight.size > 0) await Promise.allSettled([...inFlight]);
    },
  };
}
