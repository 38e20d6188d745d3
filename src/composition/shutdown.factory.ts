/** Runs every close, in order, even when one fails; then fails with all that did. */
export async function closeAll(steps: (() => Promise<unknown>)[]): Promise<void> {
  const failures: unknown[] = [];
  for (const step of steps) {
    try {
      await step();
    } catch (err) {
      failures.push(err);
    }
  }
  if (failures.length > 0) throw new AggregateError(failures, 'closing the dependencies failed');
}

/** Jobs first: a pass in flight still uses the database and the clients closed after them. */
export function createShutdown(stopJobs: () => Promise<void>, closes: (() => Promise<unknown>)[]): () => Promise<void> {
  return async () => {
    await stopJobs();
    await closeAll(closes);
  };
}

/** Whether the process has begun to stop, and who is told when it does; readiness and the listeners read it. */
export interface DrainSignal {
  isDraining(): boolean;
  onBegin(listener: () => void): void;
}

export interface DrainState extends DrainSignal {
  begin(): void;
}

export function createDrainState(): DrainState {
  let draining = false;
  const listeners: (() => void)[] = [];
  return {
    isDraining: () => draining,
    onBegin: (listener) => {
      listeners.push(listener);
    },
    begin: () => {
      if (draining) return;
      draining = true;
      for (const listener of listeners) listener();
    },
  };
}

export interface ProcessShutdownOptions {
  drain: DrainState;
  /** How long readiness answers 503 while the listeners still serve (SHUTDOWN_DRAIN_MS; 0 for a worker, which no load balancer routes to). */
  drainMs: number;
  /** The bound on what follows the drain wait: past drainMs + closeDeadlineMs the process exits 1 whatever is still open. */
  closeDeadlineMs: number;
  stopJobs: () => Promise<void>;
  /** Stops accepting connections and waits for the requests in flight. */
  closeListeners: () => Promise<void>;
  /** The dependencies, once nothing uses them any more. */
  closeRest: () => Promise<void>;
  logger: { info(obj: object, msg: string): void; warn(obj: object, msg: string): void; error(obj: object, msg: string): void };
  exit: (code: number) => void;
}

/**
 * The stop of a serving process, one signal after another. The first marks it draining (readiness
 * 503) and stops its background work, then waits `drainMs` still serving, so a load balancer that
 * health-checks readiness sends its requests elsewhere before the listeners close; then the
 * listeners close, finishing the requests in flight, and the dependencies. A second signal cuts the
 * drain wait short; one after the wait exits at once, as does the hard deadline.
 */
export function createProcessShutdown(opts: ProcessShutdownOptions): (signal: string) => void {
  let phase: 'serving' | 'draining' | 'closing' = 'serving';
  let endWait: () => void = () => undefined;

  async function stop(signal: string): Promise<void> {
    opts.drain.begin();
    opts.logger.info({ signal, drainMs: opts.drainMs }, 'shutting down: readiness answers 503, the listeners close after the drain wait');
    const deadline = setTimeout(() => {
      opts.logger.error({ deadlineMs: opts.drainMs + opts.closeDeadlineMs }, 'shutdown deadline passed: exiting with work still open');
      opts.exit(1);
    }, opts.drainMs + opts.closeDeadlineMs).unref();
    // Jobs stop meanwhile: their passes in flight finish during the wait, and other instances claim the rest.
    const jobsStopped = opts.stopJobs();
    // Its failure is reported by closeAll below, after the wait, not as an unhandled rejection during it.
    jobsStopped.catch(() => undefined);
    await new Promise<void>((resolve) => {
      const wait = setTimeout(resolve, opts.drainMs);
      endWait = () => {
        clearTimeout(wait);
        resolve();
      };
    });
    phase = 'closing';
    try {
      await closeAll([opts.closeListeners, () => jobsStopped, opts.closeRest]);
    } finally {
      clearTimeout(deadline);
    }
  }

  return (signal) => {
    if (phase === 'serving') {
      phase = 'draining';
      stop(signal).then(
        () => opts.exit(0),
        (err: unknown) => {
          opts.logger.error({ err }, 'shutdown failed');
          opts.exit(1);
        },
      );
    } else if (phase === 'draining') {
      opts.logger.warn({ signal }, 'second signal: closing the listeners now');
      endWait();
    } else {
      opts.logger.warn({ signal }, 'signal while closing: exiting now');
      opts.exit(1);
    }
  };
}
