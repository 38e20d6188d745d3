/**
 * `work`'s answer, or `late()`'s once `ms` have passed without one; `work` is left to finish on its own.
 *
 * The deadline is judged only after the I/O that has already arrived is read. A process that was
 * paused (SIGSTOP, a frozen VM, a long GC) or whose event loop was blocked wakes with the timer
 * overdue and the answer waiting in its socket, and the event loop can run the timer first: taken
 * at once, the deadline would fail work that was answered in time, and a query's deadline would
 * declare the database away when only this process had stopped.
 */
export function withDeadline<T>(work: Promise<T>, ms: number, late: () => T): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  let afterIo: NodeJS.Immediate | undefined;
  let answered = false;
  const deadline = new Promise<T>((resolve, reject) => {
    timer = setTimeout(() => {
      // Immediates run after the event loop's next poll for I/O: an answer already in a socket settles `work` first.
      afterIo = setImmediate(() => {
        if (answered) return;
        try {
          resolve(late());
        } catch (err) {
          reject(err instanceof Error ? err : new Error(String(err)));
        }
      });
    }, ms);
  });
  const settled = () => {
    answered = true;
  };
  work.then(settled, settled);
  return Promise.race([work, deadline]).finally(() => {
    clearTimeout(timer);
    clearImmediate(afterIo);
  });
}

/** Works under one shared deadline, watched by one timer rather than one each. */
export interface DeadlineSweep {
  /**
   * `work`'s answer, or a rejection with `late()`'s error once the deadline has passed without one
   * (judged, as withDeadline does, only after the I/O that already arrived is read).
   */
  bound<T>(work: Promise<T>, late: () => Error): Promise<T>;
  /** Rejects every work still waiting with `err`, at once. */
  giveUpAll(err: Error): void;
  stop(): void;
}

interface Waiting {
  startedAt: number;
  fail(err: Error): void;
  late(): Error;
}

/**
 * A deadline for many works at once: one timer sweeps them every tick (at most a quarter of the
 * deadline, so a deadline is noticed at most that late), instead of a timer, a race and a promise
 * of their own for each. On a hot path, such as every database query, that is most of the cost.
 */
export function createDeadlineSweep(ms: number, tickMs = Math.min(250, Math.max(1, Math.floor(ms / 4)))): DeadlineSweep {
  const waiting = new Set<Waiting>();
  let timer: NodeJS.Timeout | null = null;

  function sweep(): void {
    const now = performance.now();
    const overdue = [...waiting].filter((w) => now - w.startedAt >= ms);
    if (overdue.length === 0) return;
    setImmediate(() => {
      for (const w of overdue) if (waiting.has(w)) w.fail(w.late());
    });
  }

  return {
    bound<T>(work: Promise<T>, late: () => Error): Promise<T> {
      if (!timer) {
        timer = setInterval(sweep, tickMs);
        timer.unref();
      }
      return new Promise<T>((resolve, reject) => {
        const entry: Waiting = {
          startedAt: performance.now(),
          late,
          fail: (err) => {
            waiting.delete(entry);
            reject(err);
          },
        };
        waiting.add(entry);
        work.then(
          (value) => waiting.delete(entry) && resolve(value),
          (err: unknown) => waiting.delete(entry) && reject(err),
        );
      });
    },
    giveUpAll(err) {
      for (const w of [...waiting]) w.fail(err);
    },
    stop() {
      if (timer) clearInterval(timer);
      timer = null;
    },
  };
}
