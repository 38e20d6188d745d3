import type { Logger } from '../domain/logger.port.js';

/**
 * How the background loops are doing: when each last completed a pass, and the passes given up
 * past their deadline. A loop that has not completed a pass for STALLED_AFTER intervals is
 * stalled: readiness lists it and a gauge shows it, so an operator sees work that stopped.
 */
export interface WorkHealth {
  /** The loop runs from now on every `intervalMs`. */
  watch(work: string, intervalMs: number): void;
  completed(work: string): void;
  /** A pass outlived its deadline and was given up; logged once and counted. */
  abandoned(work: string, deadlineMs: number): void;
  /** The loops that have not completed a pass for 3 × their interval. */
  stalled(): string[];
}

const STALLED_AFTER = 3;

export function createWorkHealth(deps: { log: Logger; onAbandoned?: (work: string) => void; now?: () => number }): WorkHealth {
  const now = deps.now ?? Date.now;
  const loops = new Map<string, { intervalMs: number; lastCompletedAt: number }>();
  return {
    watch(work, intervalMs) {
      loops.set(work, { intervalMs, lastCompletedAt: now() });
    },
    completed(work) {
      const loop = loops.get(work);
      if (loop) loop.lastCompletedAt = now();
    },
    abandoned(work, deadlineMs) {
      deps.log.warn({ work, deadlineMs }, 'background pass abandoned past its deadline: its leases run out and the work is taken over; the next pass starts');
      deps.onAbandoned?.(work);
    },
    stalled() {
      const at = now();
      return [...loops].filter(([, l]) => at - l.lastCompletedAt > STALLED_AFTER * l.intervalMs).map(([work]) => work);
    },
  };
}
