import { randomUUID } from 'node:crypto';
import type { PaymentDetail, PaymentRepository, PaymentRow, StatusCheckClaim } from './payment.repository.js';
import type { MinistryAnswerReport, PaymentResolver } from './payment-resolution.service.js';
import type { KeyedSlots } from '../work/keyed-slots.js';
import type { AdaptiveLimit } from '../domain/adaptive-limit.js';
import { UNRESOLVED_STATUSES } from './payment.machine.js';
import type { Source, StaleLeaseReport } from '../domain/vocabulary.js';
import type { Logger } from '../domain/logger.port.js';
import type { Clock } from '../domain/clock.port.js';

export interface LiveCheckDeps {
  payments: PaymentRepository;
  resolver: PaymentResolver;
  /**
   * Each ministry system's slots, shared with the confirmation job: a live check runs in one of
   * them or is not made, so reads and background checks together stay within the system's limit.
   */
  slots: KeyedSlots;
  /** Each system's adaptive limit, which learns from the live checks' calls as from the job's. */
  limits: Record<Source, AdaptiveLimit>;
  /** A system's limit after one of its calls finished (for the gauge). */
  onLimit?: (source: Source, limit: number) => void;
  /** How long a live check holds a payment's status-check lease (LeasePolicy.statusCheck). */
  leaseMs: number;
  /** How long a check waits for a free slot of its system when the limit is full (CONFIRM_LIVE_WAIT_MS). */
  slotWaitMs: number;
  /** How often a check waiting for a slot, or for another's lease of the payment to end, looks again. */
  pollMs?: number;
  log: Logger;
  onStaleLease?: StaleLeaseReport;
  now: Clock;
  /** Monotonic milliseconds for the deadlines; the injected clock may jump. */
  elapsed?: () => number;
}

/** Where a read's status came from: a ministry answer given after the read arrived, or the books. */
export type StatusSource = 'live' | 'stored';

/** A live read's outcome: the payment as it is after the check (null when it is gone), and whether that is live. */
export interface LiveAnswer {
  payment: PaymentDetail | null;
  source: StatusSource;
}

/** The work's answer if it settles within `ms`, else null; the work goes on either way and its failure after that is nobody's. */
export function settledWithin<T>(work: Promise<T>, ms: number): Promise<T | null> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => resolve(null), Math.max(0, ms));
    work.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (err: unknown) => {
        clearTimeout(timer);
        reject(err);
      },
    );
  });
}

/** How often a check waiting for a slot looks again; one waiting for another's lease, twice as long. */
const POLL_MS = 25;
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, Math.max(0, ms)));
const isFinal = (p: PaymentRow | null) => p === null || !UNRESOLVED_STATUSES.includes(p.status);

/**
 * One check of a payment on this instance and the reads it serves. `askedAt` orders its ministry
 * call against the reads' arrivals (one counter for both): a read that arrived after the call was
 * sent cannot be served by its answer, unless the answer is final.
 */
interface Flight {
  askedAt: number | null;
  /** Monotonic ms: the latest deadline of its reads; the check gives up waiting (for a slot, a lease, the check before it) past it. */
  deadline: number;
  done: Promise<LiveAnswer>;
  /** The check the reads its call was sent before share; it starts once this one is done. */
  followUp: Flight | null;
}

/** A slot of the system within its limit, waited for up to `slotWaitMs` (and the flight's deadline); null when none freed. */
async function takeSlot(deps: LiveCheckDeps, elapsed: () => number, source: Source, flight: Flight): Promise<(() => void) | null> {
  const pollMs = deps.pollMs ?? POLL_MS;
  const until = Math.min(elapsed() + deps.slotWaitMs, flight.deadline);
  for (;;) {
    const release = deps.slots.tryTake(source);
    if (release) return release;
    const left = until - elapsed();
    if (left <= 0) return null;
    await sleep(Math.min(pollMs, left));
  }
}

/**
 * Asks the ministry under the lease, marking when the call is sent (`mark`), then lets go of the
 * lease with the token; true when the ministry answered and the lease was still ours.
 */
async function askUnderLease(deps: LiveCheckDeps, claim: StatusCheckClaim, flight: Flight, inFlight: number, mark: () => number): Promise<boolean> {
  const { now } = deps;
  let answered = false;
  // The system's limit learns from the ministry's answer alone (MinistryAnswerReport).
  const onAnswer: MinistryAnswerReport = ({ latencyMs, ok }) => {
    answered = ok;
    deps.onLimit?.(claim.source, deps.limits[claim.source].record({ latencyMs, ok, inFlight }));
  };
  try {
    flight.askedAt = mark();
    await deps.resolver.check(claim, { refNum: claim.ref_num, cause: 'partner_request', onAnswer });
  } finally {
    const kept = await deps.payments.releaseStatusCheck(claim.id, claim.lease_token, now());
    if (!kept) deps.onStaleLease?.('status_check', claim.id);
    answered &&= kept;
  }
  return answered;
}

/** The clocks a flight reads: the wall clock (leases), monotonic ms (deadlines), and the arrival/call counter. */
interface FlightClocks {
  now: Clock;
  elapsed: () => number;
  mark: () => number;
}

/**
 * The flight's check: the payment as the books have it now (final: the answer of a check under
 * way when the reads came), else its lease once free (the job's or another instance's check is
 * waited out), a slot, and the ministry's answer.
 */
async function fly(deps: LiveCheckDeps, clocks: FlightClocks, id: string, source: Source, flight: Flight): Promise<LiveAnswer> {
  const { now, elapsed, mark } = clocks;
  const pollMs = deps.pollMs ?? POLL_MS;
  let row: PaymentDetail | null = null;
  for (;;) {
    row = await deps.payments.findById(id);
    // It turned final after the reads found it unresolved: a check under way when they came answered it.
    if (isFinal(row)) return { payment: row, source: row ? 'live' : 'stored' };
    if (elapsed() >= flight.deadline || !row) return { payment: row, source: 'stored' };
    if (row.status_check_until && row.status_check_until.getTime() > now().getTime()) {
      await sleep(Math.min(pollMs * 2, flight.deadline - elapsed()));
      continue;
    }
    const release = await takeSlot(deps, elapsed, source, flight);
    if (!release) return { payment: row, source: 'stored' };
    try {
      const at = now();
      const claim = await deps.payments.claimStatusCheck({
        id,
        at,
        leaseUntil: new Date(at.getTime() + deps.leaseMs),
        // No ended check lets a read skip its own: any check that ended did so before it is claimed.
        checkedBefore: at,
        token: randomUUID(),
      });
      // The job or another instance took it meanwhile: its check is waited out like any other.
      if (!claim) {
        release();
        await sleep(Math.min(pollMs, flight.deadline - elapsed()));
        continue;
      }
      const answered = await askUnderLease(deps, claim, flight, deps.slots.inUse(source), mark);
      const after = await deps.payments.findById(id);
      return { payment: after, source: answered && after ? 'live' : 'stored' };
    } finally {
      release();
    }
  }
}

/**
 * A partner's read asking the ministry for a payment's status (GET /payments/{id}), answered
 * from a ministry answer given after the read arrived, within what the ministry system is
 * allowed: at most one status check of a payment at a time across instances (its status-check
 * lease, which the confirmation job takes too), and no more calls in flight to a system than its
 * limit. Reads of one payment on this instance share one check; a read arriving after that
 * check's call was sent waits for it and, unless its answer was final, for one follow-up check
 * that all reads in its position share. A check held by the job or another instance is waited
 * out (its lease), then this read's check follows. A check waits up to `slotWaitMs` for a slot.
 */
export function createPaymentLiveCheck(deps: LiveCheckDeps) {
  const { now } = deps;
  const elapsed = deps.elapsed ?? (() => performance.now());
  const flights = new Map<string, Flight>();
  // Orders reads' arrivals and checks' calls on this instance.
  let tick = 0;
  const clocks: FlightClocks = { now, elapsed, mark: () => ++tick };

  const stored = (payment: PaymentDetail | null): LiveAnswer => ({ payment, source: 'stored' });

  function launch(payment: PaymentRow, deadline: number, after: Flight | null): Flight {
    const flight: Flight = { askedAt: null, deadline, done: Promise.resolve(stored(null)), followUp: null };
    const run = async (): Promise<LiveAnswer> => {
      if (after) await after.done;
      try {
        return await fly(deps, clocks, payment.id, payment.source, flight);
      } catch (err) {
        deps.log.warn({ err, paymentId: payment.id }, 'live confirmation failed');
        return stored(await deps.payments.findById(payment.id).catch(() => null));
      }
    };
    flight.done = run().finally(() => {
      if (flights.get(payment.id) !== flight) return;
      if (flight.followUp) flights.set(payment.id, flight.followUp);
      else flights.delete(payment.id);
    });
    return flight;
  }

  return {
    /**
     * The live read of an unresolved payment, arriving now and answered within `withinMs` (the
     * caller bounds its wait too): the check on this instance whose call is not yet sent,
     * else a follow-up of the one under way, else a new one. Never rejects; the answer is stored
     * when no check could be made in time, the breaker is open or the check failed.
     */
    read(payment: PaymentRow, withinMs: number): Promise<LiveAnswer> {
      const arrived = ++tick;
      const deadline = elapsed() + withinMs;
      let flight = flights.get(payment.id);
      if (!flight) {
        flight = launch(payment, deadline, null);
        flights.set(payment.id, flight);
      } else if (flight.askedAt !== null && flight.askedAt < arrived) {
        flight.followUp ??= launch(payment, deadline, flight);
        flight = flight.followUp;
      }
      flight.deadline = Math.max(flight.deadline, deadline);
      return flight.done;
    },
  };
}

export type PaymentLiveCheck = ReturnType<typeof createPaymentLiveCheck>;
