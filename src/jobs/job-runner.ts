import type { Logger } from '../domain/logger.port.js';
import type { DatabaseOutage } from '../db/database-outage.monitor.js';
import type { WorkPriority } from '../db/work-priority.js';

export interface Job {
  name: string;
  intervalMs: number;
  /** One pass; must be idempotent and safe to run concurrently in several instances. */
  run(): Promise<void>;
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

export interface RunningJobs {
  stop(): Promise<void>;
}

/** What the runner needs to sit out a database outage instead of failing every pass. */
export interface JobDatabase {
  outage: DatabaseOutage;
  /** True when the database answers. */
  ping(): Promise<boolean>;
}

/** While the database is away, the runner asks it this often whether it is back. */
const PROBE_EVERY_MS = 500;

/**
 * Runs each job on its interval, never overlapping itself, as background work (`priority`);
 * stop() waits for the pass in flight.
 * While the database is away no pass starts: one probe at a time asks whether it is back, and the
 * passes resume on their own once it answers.
 */
export function startJobs(jobs: Job[], log: Logger, database?: JobDatabase, priority?: WorkPriority): RunningJobs {
  let stopped = false;
  const inFlight = new Set<Promise<void>>();
  let probing = false;
  let lastProbeAt = 0;

  function probe(db: JobDatabase): void {
    if (probing || Date.now() - lastProbeAt < PROBE_EVERY_MS) return;
    probing = true;
    lastProbeAt = Date.now();
    void db
      .ping()
      .then((ok) => ok && db.outage.recovered())
      .finally(() => (probing = false));
  }

  const timers = jobs.map((job) => {
    let running = false;
    return setInterval(() => {
      if (running || stopped) return;
      if (database?.outage.down) return probe(database);
      running = true;
      const pass = (priority ? priority.background(() => job.run()) : job.run())
        .catch((err: unknown) => {
          if (!database?.outage.absorb(err)) log.error({ err, job: job.name }, 'job pass failed');
        })
        .finally(() => {
          running = false;
          inFlight.delete(pass);
        });
      inFlight.add(pass);
    }, job.intervalMs);
  });
  return {
    async stop() {
      stopped = true;
      timers.forEach(clearInterval);
      await Promise.allSettled([...inFlight]);
      await Promise.allSettled(jobs.map((job) => (job.stop ? job.stop() : job.drain?.())));
    },
  };
}
