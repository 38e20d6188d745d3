import { backoffDelayMs, doublingBackoff, type Backoff } from './backoff.js';

/** How often an unresolved payment (or an owed ministry cancellation) is asked about again. */
export interface CheckSchedule {
  /** The first checks come this often, while a citizen is most likely paying. */
  intervalMs: number;
  /** How many checks keep the first interval before the wait starts to double. */
  fastChecks: number;
  /** The wait between checks never grows beyond this. */
  maxDelayMs: number;
}

/** Checks of a new payment that keep CONFIRM_POLL_MS apart before the wait starts doubling. */
const CONFIRM_FAST_CHECKS = 10;

/** The schedule of a payment's confirmation checks and of an owed ministry cancellation's retries. */
export function confirmationCheckSchedule(intervalMs: number, maxDelayMs: number): CheckSchedule {
  return { intervalMs, fastChecks: CONFIRM_FAST_CHECKS, maxDelayMs };
}

/** Flat at first, then doubling, capped: the waits between checks, for as long as checks go on. */
export function checkBackoff(schedule: CheckSchedule): Backoff {
  return doublingBackoff({ intervalMs: schedule.intervalMs, fastTries: schedule.fastChecks, maxDelayMs: schedule.maxDelayMs });
}

/** The wait before the check after `attempts` checks. */
export function nextCheckDelayMs(backoff: Backoff, attempts: number): number {
  return backoffDelayMs(backoff, attempts) ?? 0;
}

/** A submitted payment the citizen has not paid within `expiryMs` is given up. */
export function isExpired(submittedAt: Date | null, now: Date, expiryMs: number): boolean {
  return submittedAt !== null && now.getTime() - submittedAt.getTime() >= expiryMs;
}
