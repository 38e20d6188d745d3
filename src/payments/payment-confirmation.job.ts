import type { Job } from '../work/job-runner.js';
import { createLeasedWorkLoop, type ClaimResult, type LaneSlots, type WorkLane } from '../work/leased-work.loop.js';
import { checkBackoff, nextCheckDelayMs, type CheckSchedule } from '../domain/check-schedule.js';
import type { ClaimedPayment, PaymentRepository } from './payment.repository.js';
import type { ClaimedCancellation, MinistryCancellationRepository } from './ministry-cancellation.repository.js';
import type { MinistryAnswerReport, PaymentResolver } from './payment-resolution.service.js';
import type { MinistryCancellationService } from './ministry-cancellation.service.js';
import { SOURCES, type Source, type StaleLeaseReport } from '../domain/vocabulary.js';
import type { AdaptiveLimit } from '../domain/adaptive-limit.js';
import { createKeyedSlots, type KeyedSlots } from '../work/keyed-slots.js';
import { UNRESOLVED_STATUSES } from './payment.machine.js';
import type { Logger } from '../domain/logger.port.js';
import type { Tracer } from '../domain/tracer.port.js';
import { parseTraceparent } from '../domain/trace-context.js';
import type { DatabaseOutage } from '../db/database-outage.monitor.js';
import type { Clock } from '../domain/clock.port.js';

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
  /**
   * The slots of each system within its limit, shared with the partners' live status checks
   * (GET /payments/{id}), so the two together stay within it. Unset: the job's own.
   */
  slots?: KeyedSlots;
  /** The most any one system's limit can reach; the instance runs at most this many per system. */
  maxPerSource: number;
  /** How long a claim stays ours: longer than any one check can take (src/domain/lease-policy.ts). */
  leaseMs: number;
  /** A pass (its claims) past this is abandoned. */
  passDeadlineMs?: number;
  log: Logger;
  /** Errors that only say the database is away are its to log (once per outage). */
  outage?: DatabaseOutage;
  now: Clock;
  /** A check outlived its lease and another instance took the payment: its reschedule was refused. */
  onStaleLease?: StaleLeaseReport;
  /** Called after a check resolved a payment (a confirmation wrote an outbox row): the webhook job delivers it now. */
  onResolved?: () => void;
  /** A system's limit after one of its calls finished (for the gauge). */
  onLimit?: (source: Source, limit: number) => void;
  /** Monotonic milliseconds for call latency; the injected clock may jump. */
  elapsed?: () => number;
  /** Each check and cancellation is a span of the trace of the request that created its payment. */
  tracer?: Tracer;
}

/** One call's worth of work in a ministry system's slot: an owed cancellation or a payment's check. */
type MinistryWork =
  | { kind: 'cancellation'; row: ClaimedCancellation; inFlight: number }
  | { kind: 'check'; payment: ClaimedPayment; claimedAt: Date; inFlight: number };

const sourceOf = (w: MinistryWork): Source => (w.kind === 'check' ? w.payment.source : w.row.source);

/**
 * Checks unresolved payments with their ministry and retries owed ministry cancellations, in one
 * lane of the leased-work loop keyed by ministry system: a slow or failing system fills its own
 * slots and never delays another system's checks. How many slots a system has follows its
 * answers (domain/adaptive-limit.ts): more while it answers as fast with more calls in flight,
 * fewer when its latency climbs or its calls fail.
 */
export function createPaymentConfirmationJob(deps: PaymentConfirmationJobDeps): Job {
  const { now } = deps;
  const elapsed = deps.elapsed ?? (() => performance.now());
  // Due a little early, so the pass one interval later always finds it due.
  const slackMs = Math.floor(deps.schedule.intervalMs / 10);
  const backoff = checkBackoff(deps.schedule);
  async function checkPayment(payment: ClaimedPayment, claimedAt: Date, onAnswer: MinistryAnswerReport): Promise<void> {
    let outcome: 'resolved' | 'unresolved' = 'unresolved';
    try {
      outcome = await deps.resolver.check(payment, { refNum: payment.ref_num, cause: 'confirmation_job', onAnswer });
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
   * Claims owed cancellations first, then due checks, within the slots each system has free; the
   * slots offered are held while the claim runs (they are shared with the partners' live checks).
   */
  async function claim(slots: LaneSlots<MinistryWork>, at: Date): Promise<ClaimResult<MinistryWork>> {
    const leaseUntil = new Date(at.getTime() + deps.leaseMs);
    // Counted before the holds below, which the running count includes.
    const started = new Map(SOURCES.map((s) => [s, slots.pool.running(s)]));
    // Held while the claim runs: a live check taking one meanwhile would leave claimed work without a slot.
    const offered = Object.fromEntries(SOURCES.map((s) => [s, slots.pool.hold(s, slots.pool.available(s))]));
    const owed = await deps.cancellations.claimDue(at, leaseUntil, offered);
    const left = Object.fromEntries(SOURCES.map((s) => [s, (offered[s] ?? 0) - owed.filter((r) => r.source === s).length]));
    const due = await deps.payments.claimDue(at, leaseUntil, left);
    // Each call counts the calls of its system already running and those claimed before it.
    const inFlight = (source: Source) => {
      started.set(source, (started.get(source) ?? 0) + 1);
      return started.get(source) ?? 1;
    };
    const claimed: MinistryWork[] = [
      ...owed.map((row) => ({ kind: 'cancellation' as const, row, inFlight: inFlight(row.source) })),
      ...due.map((payment) => ({ kind: 'check' as const, payment, claimedAt: at, inFlight: inFlight(payment.source) })),
    ];
    return { claimed, saturated: SOURCES.filter((s) => due.filter((p) => p.source === s).length >= (left[s] ?? 0)) };
  }

  /** The work's span, a child of the span of the request that created its payment. */
  function traced(work: MinistryWork, fn: () => Promise<void>): Promise<void> {
    if (!deps.tracer) return fn();
    const row = work.kind === 'check' ? work.payment : work.row;
    const name = work.kind === 'check' ? 'payment confirmation check' : 'payment ministry cancellation';
    const attributes = { 'payment.id': work.kind === 'check' ? work.payment.id : work.row.payment_id, 'ministry.system': sourceOf(work) };
    return deps.tracer.span(name, { kind: 'consumer', attributes, parent: parseTraceparent(row.trace_parent, row.trace_state) }, fn);
  }

  /**
   * Tells the system's limit how long the ministry took to answer and whether it did: for a check,
   * its status call alone; for a cancellation, the whole attempt.
   */
  async function perform(work: MinistryWork): Promise<void> {
    const source = sourceOf(work);
    const learn: MinistryAnswerReport = ({ latencyMs, ok }) =>
      deps.onLimit?.(source, deps.limits[source].record({ latencyMs, ok, inFlight: work.inFlight }));
    if (work.kind === 'check') return checkPayment(work.payment, work.claimedAt, learn);
    const startedAt = elapsed();
    let ok = false;
    try {
      ok = await deps.ministryCancellation.attempt(work.row);
    } finally {
      learn({ latencyMs: elapsed() - startedAt, ok });
    }
  }

  return createLeasedWorkLoop({
    name: 'payment-confirmation',
    // Claims come four times per check interval: a payment whose check falls due waits at most a
    // quarter interval for a pass, not a whole one (approval to webhook is budgeted at one interval).
    intervalMs: Math.max(50, Math.floor(deps.schedule.intervalMs / 4)),
    passDeadlineMs: deps.passDeadlineMs,
    lanes: [
      {
        name: 'ministry',
        perKey: deps.slots ?? createKeyedSlots((source) => deps.limits[source as Source].limit()),
        total: deps.maxPerSource * SOURCES.length,
        keyOf: sourceOf,
        idOf: (w) => (w.kind === 'check' ? `check:${w.payment.id}` : `cancellation:${w.row.payment_id}`),
        claim,
        perform: (work) => traced(work, () => perform(work)),
        failure: { level: 'warn', message: 'confirmation check failed' },
      } satisfies WorkLane<MinistryWork>,
    ],
    log: deps.log,
    outage: deps.outage,
    now,
  });
}
