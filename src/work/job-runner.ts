import type { Logger } from '../domain/logger.port.js';
import type { DatabaseOutage } from '../db/database-outage.monitor.js';
import type { WorkPriority } from '../db/work-priority.js';
import type { WorkHealth } from './work-health.monitor.js';

export interface Job {
  name: string;
  intervalMs: number;
  /** One pass; must be idempotent and safe to run concurrently in several instances. */
  run(): Promise<void>;
  /**
   * How long a pass may go without progress before it is abandoned: derived from the deadlines of
   * the work it does (src/domain/lease-policy.ts). The abandoned pass's leases run out, so the
   * next pass, here or on another instance, takes its work over. Unset, a pass is never abandoned.
   */
  deadlineMs?: number;
  /** When a long pass last made progress (renewed its lease), in epoch ms; its deadline counts from then. */
  progress?(): number;
  /** The runner gave up the pass in flight: the next `run()` must start a new one, not join it. */
  abandon?(): void;
  /**
   * Resolves once the work a pass handed off (to run beside later passes) has finished; jobs
   * whose pass does all its work before returning leave it out.
   */
  drain?(): Promise<void>;
  /**
   * Stops claiming new work (passes and refills become no-ops) and resolves once the work in
   * flight has finished: shutdown. Jobs that claim again on their own as slots free have it.
   */
  stop?(): Promise<void>;
}

/**
 * What a job's loop did: a pass started or ended, or a tick sat out a database outage (no pass,
 * at most a probe). Tests read it to know background work happened rather than wait for it.
 */
export interface JobActivity {
  job: string;
  kind: 'started' | 'completed' | 'failed' | 'abandoned' | 'sat-out';
}

export interface RunningJobs {
  stop(): Promise<void>;
  /** Calls `listener` with each activity of these loops from now on; returns its removal. */
  observe(listener: (activity: JobActivity) => void): () => void;
}

export interface JobRunnerOptions {
  /** Sits out a database outage instead of failing every pass: while it is down, no pass starts and it probes. */
  outage?: DatabaseOutage;
  /** Runs each pass as background work. */
  priority?: WorkPriority;
  /** Told of every completed and abandoned pass. */
  health?: WorkHealth;
}

/**
 * Runs each job on its interval, never overlapping itself, as background work; stop() waits for
 * the passes in flight (not for abandoned ones). While the database is away no pass starts: one
 * probe at a time asks whether it is back, and the passes resume on their own once it answers. A
 * pass past its deadline is abandoned, and the job's next tick starts a new one.
 */
export function startJobs(jobs: Job[], log: Logger, opts: JobRunnerOptions = {}): RunningJobs {
  const { outage, priority, health } = opts;
  let stopped = false;
  const inFlight = new Set<Promise<void>>();
  const listeners = new Set<(activity: JobActivity) => void>();
  const tell = (job: string, kind: JobActivity['kind']): void => listeners.forEach((listener) => listener({ job, kind }));

  const timers = jobs.map((job) => {
    health?.watch(job.name, job.intervalMs);
    let current: symbol | null = null;

    /** Resolves when the pass ends or is given up, whichever comes first: shutdown waits for no abandoned pass. */
    function runPass(pass: symbol): Promise<void> {
      let watchdog: NodeJS.Timeout | undefined;
      return new Promise<void>((settle) => {
        const { deadlineMs } = job;
        const startedAt = Date.now();
        const check = (): void => {
          if (current !== pass || deadlineMs === undefined) return;
          const left = Math.max(startedAt, job.progress?.() ?? 0) + deadlineMs - Date.now();
          if (left > 0) {
            watchdog = setTimeout(check, left);
            return;
          }
          // Its leases run out and hand its work to the next pass, here or on another instance.
          current = null;
          job.abandon?.();
          health?.abandoned(job.name, deadlineMs);
          tell(job.name, 'abandoned');
          settle();
        };
        if (deadlineMs !== undefined) watchdog = setTimeout(check, deadlineMs);
        (priority ? priority.background(() => job.run()) : job.run())
          .then(
            () => {
              if (current !== pass) return;
              health?.completed(job.name);
              tell(job.name, 'completed');
            },
            (err: unknown) => {
              // An abandoned pass's failure is its own: the loop has moved on.
              if (current !== pass) return;
              if (!outage?.absorb(err)) log.error({ err, job: job.name }, 'job pass failed');
              tell(job.name, 'failed');
            },
          )
          .finally(() => {
            if (current === pass) current = null;
            clearTimeout(watchdog);
            settle();
          });
      });
    }

    return setInterval(() => {
      if (current || stopped) return;
      if (outage?.down) {
        tell(job.name, 'sat-out');
        return outage.probe();
      }
      const pass = Symbol(job.name);
      current = pass;
      tell(job.name, 'started');
      const settled = runPass(pass).finally(() => inFlight.delete(settled));
      inFlight.add(settled);
    }, job.intervalMs);
  });
  return {
    async stop() {
      stopped = true;
      timers.forEach(clearInterval);
      await Promise.allSettled([...inFlight]);
      await Promise.allSettled(jobs.map((job) => (job.stop ? job.stop() : job.drain?.())));
    },
    observe(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
  };
}
