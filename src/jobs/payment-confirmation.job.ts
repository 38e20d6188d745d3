import type { Job } from './job-runner.js';
import { createKeyedPool } from './keyed-pool.js';
import { createSerialPass } from './serial-pass.js';
import { checkBackoff, nextCheckDelayMs, type CheckSchedule } from '../domain/check-schedule.js';
import type { ClaimedPayment, PaymentRepository } from '../db/repositories/payment.repository.js';
import type { MinistryCancellationRepository } from '../db/repositories/ministry-cancellation.repository.js';
import type { PaymentResolver } from '../services/payment-resolution.service.js';
import type { MinistryCancellationService } from '../services/ministry-cancellation.service.js';
import { SOURCES, type Source, type StaleLeaseReport } from '../domain/vocabulary.js';
import type { AdaptiveLimit } from '../domain/adaptive-limit.js';
import { UNRESOLVED_STATUSES } from '../domain/payment-transitions.js';
import type { Logger } from '../domain/logger.port.js';
import type { DatabaseOutage } from '../db/database-outage.monitor.js';
import { systemClock, type Clock } from '../domain/clock.port.js';

export interface PaymentConfirmationJobDeps {
  payments: PaymentRepository;
  cancellations: MinistryCancellationRepository;
  resolver: PaymentResolver;
  ministryCancellation: MinistryCancellationService;
  schedule: CheckSchedule;
  /**
   * Checks and owed cancellations in flight per ministry system, per instance: each system's limit
   * learns from the latency and failures of its own calls.
   */
  limits: Record<Source, AdaptiveLimit>;
  /** The most any one system's limit can reach; the instance runs at most this many per system. */
  maxPerSource: number;
  /** How long a claim stays ours: longer than any one check can take. */
  leaseMs: number;
  log: Logger;
  /** Errors that only say the database is away are its to log (once per outage). */
  outage?: DatabaseOutage;
  now?: Clock;
  /** A check outlived its lease and another instance took the payment: its reschedule was refused. */
  onStaleLease?: StaleLeaseReport;
  /** Called after a check resolved a payment (a confirmation wrote an outbox row): the webhook job delivers it now. */
  onResolved?: () => void;
  /** A system's limit after one of its calls finished (for the gauge). */
  onLimit?: (source: Source, limit: number) => void;
  /** Monotonic milliseconds for call latency; the injected clock may jump. */
  elapsed?: () => number;
}

/**
 * Checks unresolved payments with their ministry and retries owed ministry cancellations. Work is
 * claimed per ministry system, only as much as that system has free slots, and runs beside later
 * passes: a slow or failing system fills its own slots and never delays another system's checks.
 * How many slots a system has follows its answers (domain/adaptive-limit.ts): more while it
 * answers as fast with more calls in flight, fewer when its latency climbs or its calls fail.
 * When a slot frees and the last claim found work, the job claims again at once, so a backlog
 * drains as fast as the ministries answer instead of one batch of slots per interval.
 * Claims use SKIP LOCKED and a lease (next_check_at pushed forward), so any number of instances
 * can run this at once.
 */
export function createPaymentConfirmationJob(deps: PaymentConfirmationJobDeps): Job {
  const now = deps.now ?? systemClock;
  const elapsed = deps.elapsed ?? (() => performance.now());
  const total = deps.maxPerSource * SOURCES.length;
  const pool = createKeyedPool({
    perKey: (source) => deps.limits[source as Source].limit(),
    total,
    onError: (err, source) => {
      if (!deps.outage?.absorb(err)) deps.log.warn({ err, source }, 'confirmation check failed');
    },
    onFree: (source) => {
      if (saturated.has(source)) refill();
    },
  });
  /** Systems whose slots the last pass filled: more of their work may be due, so a freed slot claims again at once. */
  let saturated = new Set<string>();
  // Due a little early, so the pass one interval later always finds it due.
  const slackMs = Math.floor(deps.schedule.intervalMs / 10);
  const backoff = checkBackoff(deps.schedule);

  // Claims come four times per check interval: a payment whose check falls due waits at most a
  // quarter interval for a pass, not a whole one (approval to webhook is budgeted at one interval).
  const claimEveryMs = Math.max(50, Math.floor(deps.schedule.intervalMs / 4));

  const freeSlots = () => Object.fromEntries(SOURCES.map((s) => [s, pool.available(s)]));

  async function checkPayment(payment: ClaimedPayment, claimedAt: Date): Promise<void> {
    let outcome: 'resolved' | 'unresolved' = 'unresolved';
    try {
      outcome = await deps.resolver.check(payment, { refNum: payment.ref_num, cause: 'confirmation_job' });
    } finally {
      // A resolved payment has no next check; the reschedule would find nothing to move.
      if (outcome === 'unresolved') {
        const delay = nextCheckDelayMs(backoff, payment.lease_token) - slackMs;
        const kept = await deps.payments.reschedule(payment.id, new Date(claimedAt.getTime() + delay), payment.lease_token);
        if (!kept && UNRESOLVED_STATUSES.includes((await deps.payments.findById(payment.id))?.status ?? 'failed')) deps.onStaleLease?.('confirmation_check', payment.id);
      } else {
        deps.onResolved?.();
      }
    }
  }

  /**
   * Runs one call's worth of work in a slot of `source` and tells that system's limit how long the
   * slot was held and whether the ministry answered. `task` resolves false (or throws) on a failure.
   */
  function runTimed(source: Source, task: () => Promise<boolean>): void {
    const inFlight = pool.running(source) + 1;
    const startedAt = elapsed();
    pool.tryRun(source, async () => {
      let ok = false;
      try {
        ok = await task();
      } finally {
        deps.onLimit?.(source, deps.limits[source].record({ latencyMs: elapsed() - startedAt, ok, inFlight }));
      }
    });
  }

  async function pass(): Promise<void> {
    const at = now();
    const leaseUntil = new Date(at.getTime() + deps.leaseMs);
    const offered = freeSlots();
    const owed = await deps.cancellations.claimDue(at, leaseUntil, offered);
    owed.forEach((row) => runTimed(row.source, () => deps.ministryCancellation.attempt(row)));
    const left = Object.fromEntries(SOURCES.map((s) => [s, (offered[s] ?? 0) - owed.filter((r) => r.source === s).length]));
    const due = await deps.payments.claimDue(at, leaseUntil, left);
    due.forEach((payment) =>
      runTimed(payment.source, async () => {
        await checkPayment(payment, at);
        return true;
      }),
    );
    // Judged by what was offered, not by the slots now free: checks finishing meanwhile free slots too.
    saturated = new Set(SOURCES.filter((s) => due.filter((p) => p.source === s).length >= (left[s] ?? 0)));
  }
  const passes = createSerialPass(pass);
  const refill = () =>
    passes.now().catch((err: unknown) => {
      if (!deps.outage?.absorb(err)) deps.log.error({ err, job: 'payment-confirmation' }, 'job pass failed');
    });

  return {
    name: 'payment-confirmation',
    intervalMs: claimEveryMs,
    run: () => passes.now(),
    async drain() {
      while (passes.busy() || pool.free() < total) {
        await passes.idle();
        await pool.idle();
      }
    },
    async stop() {
      await passes.stop();
      await pool.idle();
    },
  };
}
