import type { Logger } from '../domain/logger.port.js';

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

/** Runs each job on its interval, never overlapping itself; stop() waits for the pass in flight. */
export function startJobs(jobs: Job[], log: Logger): RunningJobs {
  let stopped = false;
  const inFlight = new Set<Promise<void>>();
  const timers = jobs.map((job) => {
    let running = false;
    return setInterval(() => {
      if (running || stopped) return;
      running = true;
      const pass = job
        .run()
        .catch((err: unknown) => log.error({ err, job: job.name }, 'job pass failed'))
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
