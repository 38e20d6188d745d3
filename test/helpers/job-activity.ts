import { startJobs, type JobActivity, type RunningJobs } from '../../src/work/job-runner.js';

export interface ActivityRecord {
  /** Every activity of the loops since the record began, in order. */
  seen: JobActivity[];
  /** A point in the record to count from. */
  mark(): number;
  /** How many activities of `kind` (of `job` when given) since `from`. */
  count(kind: JobActivity['kind'], job?: string, from?: number): number;
  /** The jobs that did `kind` at least once since `from`, sorted. */
  jobsThat(kind: JobActivity['kind'], from?: number): string[];
}

/** Keeps what the running loops do, so a test waits for passes rather than for time. */
export function recordActivity(jobs: RunningJobs): ActivityRecord {
  const seen: JobActivity[] = [];
  jobs.observe((activity) => seen.push(activity));
  const from = (mark = 0) => seen.slice(mark);
  return {
    seen,
    mark: () => seen.length,
    count: (kind, job, mark) => from(mark).filter((a) => a.kind === kind && (job === undefined || a.job === job)).length,
    jobsThat: (kind, mark) => [...new Set(from(mark).filter((a) => a.kind === kind).map((a) => a.job))].sort(),
  };
}

const quiet = { info: () => undefined, warn: () => undefined, error: () => undefined };

/**
 * Resolves once a loop of the same runner, started now, has completed `ticks` passes every
 * `intervalMs`: a marker after which any loop still ticking at that interval or faster has
 * ticked too, so a test can show such a tick is absent without sleeping a guessed while.
 */
export async function loopTicked(intervalMs: number, ticks: number): Promise<void> {
  let passes = 0;
  let done: () => void = () => undefined;
  const reached = new Promise<void>((resolve) => (done = resolve));
  const marker = startJobs([{ name: 'marker', intervalMs, run: async () => void (++passes >= ticks && done()) }], quiet);
  try {
    await reached;
  } finally {
    await marker.stop();
  }
}
