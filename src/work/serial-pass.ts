/**
 * One claim pass of a job at a time. Asked to run while a pass is in flight, it runs once more
 * right after it (the pass in flight may have counted its free slots before the ask), however
 * many asks came in between.
 */
export interface SerialPass {
  /** Runs a pass now, or once more right after the one in flight. */
  now(): Promise<void>;
  /** Resolves when no pass is in flight. */
  idle(): Promise<void>;
  busy(): boolean;
  /** No pass starts from now on; resolves when the one in flight has finished. */
  stop(): Promise<void>;
  /** Gives up the pass in flight (it outlived its deadline): the next ask starts a new one. */
  abandon(): void;
}

export function createSerialPass(pass: () => Promise<void>): SerialPass {
  let current: Promise<void> | null = null;
  let again = false;
  let stopped = false;
  let generations = 0;

  function now(): Promise<void> {
    if (stopped) return Promise.resolve();
    if (current) {
      again = true;
      return current;
    }
    const generation = ++generations;
    current = (async () => {
      try {
        do {
          again = false;
          await pass();
        } while (again && !stopped && generation === generations);
      } finally {
        // An abandoned pass that ends late leaves the pass after it alone.
        if (generation === generations) current = null;
      }
    })();
    return current;
  }

  const idle = async () => {
    while (current) await current.catch(() => undefined);
  };
  return {
    now,
    idle,
    busy: () => current !== null,
    stop() {
      stopped = true;
      return idle();
    },
    abandon() {
      generations += 1;
      current = null;
      again = false;
    },
  };
}
