/**
 * Runs tasks concurrently with a cap per key (a ministry system, a webhook endpoint) and a cap
 * overall, so a key whose tasks hang or fail uses up only its own slots and never another key's.
 */
export interface KeyedPool {
  /** How many more tasks `key` may start now (bounded by both caps). */
  available(key: string): number;
  /** Free slots overall. */
  free(): number;
  /** Tasks of `key` running now. */
  running(key: string): number;
  /** Starts the task if `key` has a free slot; false when it has none. */
  tryRun(key: string, task: () => Promise<unknown>): boolean;
  /** Resolves once every task started so far has finished. */
  idle(): Promise<void>;
}

export interface KeyedPoolOptions {
  /** A fixed cap per key, or one read each time a task may start (a limit that adapts). */
  perKey: number | ((key: string) => number);
  total: number;
  onError: (err: unknown, key: string) => void;
  /** Called once a task's slot is free again (its key's count already lowered). */
  onFree?: (key: string) => void;
}

export function createKeyedPool(opts: KeyedPoolOptions): KeyedPool {
  const running = new Map<string, number>();
  const inFlight = new Set<Promise<void>>();

  const cap = opts.perKey;
  const perKey = typeof cap === 'number' ? () => cap : cap;
  const free = () => Math.max(0, opts.total - inFlight.size);
  const available = (key: string) => Math.min(free(), Math.max(0, perKey(key) - (running.get(key) ?? 0)));

  return {
    available,
    free,
    running: (key) => running.get(key) ?? 0,
    tryRun(key, task) {
      if (available(key) <= 0) return false;
      running.set(key, (running.get(key) ?? 0) + 1);
      const done: Promise<void> = Promise.resolve()
        .then(task)
        .then(
          () => undefined,
          (err: unknown) => opts.onError(err, key),
        )
        .finally(() => {
          const left = (running.get(key) ?? 1) - 1;
          if (left > 0) running.set(key, left);
          else running.delete(key);
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
