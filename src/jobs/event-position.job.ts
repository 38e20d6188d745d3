import type { Job } from '../work/job-runner.js';
import type { EventLogRepository } from '../db/repositories/event-log.repository.js';

/**
 * Positions committed events between reads. Reads position what is pending themselves, at most a
 * few batches each; this keeps the backlog short after a burst that no partner was reading, so a
 * read seldom has to wait on the assigner. Safe on several instances: assigners take turns on one
 * row lock, and a pass with nothing pending is one index probe.
 */
export function createEventPositionJob(deps: { events: Pick<EventLogRepository, 'assignPending'>; intervalMs: number; deadlineMs?: number }): Job {
  return {
    name: 'event-positions',
    intervalMs: deps.intervalMs,
    deadlineMs: deps.deadlineMs,
    run: () => deps.events.assignPending(),
  };
}
