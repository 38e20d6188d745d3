/** How often an unresolved payment (or an owed ministry cancellation) is asked about again. */
export interface CheckSchedule {
  /** The first checks come this often, while a citizen is most likely paying. */
  intervalMs: number;
  /** How many checks keep the first interval before the wait starts to double. */
  fastChecks: number;
  /** The wait between checks never grows beyond this. */
  maxDelayMs: number;
}

/** Delay before the check after `attempts` checks: flat at first, then doubling, capped. */
export function nextCheckDelayMs(attempts: number, schedule: CheckSchedule): number {
  const doublings = Math.max(0, attempts - schedule.fastChecks);
  // Beyond 2^30 the cap has long applied; the bound keeps the power finite.
  const delay = schedule.intervalMs * 2 ** Math.min(doublings, 30);
  return Math.min(Math.max(delay, schedule.intervalMs), Math.max(schedule.maxDelayMs, schedule.intervalMs));
}

/** A submitted payment the citizen has not paid within `expiryMs` is given up. */
export function isExpired(submittedAt: Date | null, now: Date, expiryMs: number): boolean {
  return submittedAt !== null && now.getTime() - submittedAt.getTime() >= expiryMs;
}
