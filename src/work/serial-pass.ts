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
}

export function createSerialPass(pass: () => Promise<void>): SerialPass {
  let current: Promise<void> | null = null;
  let again = false;
  let stopped = false;

  function now(): Promise<void> {
    if (stopped) return Promise.resolve();
    if (current) {
      again = true;
      return current;
    }
    current = (async () => {
      try {
        do {
          again = false;
          await pass();
        } while (again && !stopped);
      } finally {
        current = null;
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
  };
}
