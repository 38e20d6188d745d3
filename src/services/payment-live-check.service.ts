import { randomUUID } from 'node:crypto';
import type { PaymentRepository, PaymentRow, StatusCheckClaim } from '../db/repositories/payment.repository.js';
import type { MinistryAnswerReport, PaymentResolver } from './payment-resolution.service.js';
import type { KeyedSlots } from '../work/keyed-slots.js';
import type { AdaptiveLimit } from '../domain/adaptive-limit.js';
import type { Source, StaleLeaseReport } from '../domain/vocabulary.js';
import type { Logger } from '../domain/logger.port.js';
import { systemClock, type Clock } from '../domain/clock.port.js';

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
  /** A check of the payment ended this recently (CONFIRM_LIVE_MIN_INTERVAL_MS): the read answers from it. */
  minIntervalMs: number;
  log: Logger;
  onStaleLease?: StaleLeaseReport;
  now?: Clock;
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

/**
 * A partner's read asking the ministry for a payment's status (GET /payments/{id}), within what
 * the ministry system is allowed: at most one status check of a payment at a time across
 * instances (its status-check lease, which the confirmation job takes too), none again within
 * the live interval, and no more calls in flight to a system than its limit. Reads of one payment
 * on this instance share one check. Whenever a check cannot be made now, the read answers the
 * stored status: nobody waits for a slot or a lease.
 */
export function createPaymentLiveCheck(deps: LiveCheckDeps) {
  const now = deps.now ?? systemClock;
  const flights = new Map<string, Promise<void>>();

  /** The row read says a check is under way somewhere, or one ended within the interval. */
  function answeredLately(payment: PaymentRow, at: number): boolean {
    if (payment.status_check_until && payment.status_check_until.getTime() > at) return true;
    return payment.status_checked_at !== null && payment.status_checked_at.getTime() > at - deps.minIntervalMs;
  }

  /** Asks the ministry under the lease, then lets go of it with the token: the next read may ask after the interval. */
  async function checkHeld(claim: StatusCheckClaim, onAnswer: MinistryAnswerReport): Promise<void> {
    try {
      await deps.resolver.check(claim, { refNum: claim.ref_num, cause: 'partner_request', onAnswer });
    } finally {
      const kept = await deps.payments.releaseStatusCheck(claim.id, claim.lease_token, now());
      if (!kept) deps.onStaleLease?.('status_check', claim.id);
    }
  }

  /** One live check in a slot of the payment's system; `inFlight` counts that system's calls, this one included. */
  async function fly(payment: PaymentRow, release: () => void, inFlight: number): Promise<void> {
    // The system's limit learns from the ministry's answer alone (MinistryAnswerReport).
    const learn: MinistryAnswerReport = ({ latencyMs, ok }) => deps.onLimit?.(payment.source, deps.limits[payment.source].record({ latencyMs, ok, inFlight }));
    try {
      const at = now();
      const claim = await deps.payments.claimStatusCheck({
        id: payment.id,
        at,
        leaseUntil: new Date(at.getTime() + deps.leaseMs),
        checkedBefore: new Date(at.getTime() - deps.minIntervalMs),
        token: randomUUID(),
      });
      // Another instance's read or the job got there first: this read answers from theirs.
      if (!claim) return;
      await checkHeld(claim, learn);
    } catch (err) {
      deps.log.warn({ err, paymentId: payment.id }, 'live confirmation failed');
    } finally {
      release();
    }
  }

  return {
    /**
     * The live check of an unresolved payment: the one under way on this instance, or a new one
     * when its system has a free slot and the row shows no check under way or ended within the
     * interval (the lease decides across instances). Settles once the check is done, never with
     * an error; null when no check is made and the stored status is the answer.
     */
    join(payment: PaymentRow): Promise<void> | null {
      const flying = flights.get(payment.id);
      if (flying) return flying;
      if (answeredLately(payment, now().getTime())) return null;
      const release = deps.slots.tryTake(payment.source);
      if (!release) return null;
      const flight = fly(payment, release, deps.slots.inUse(payment.source)).finally(() => {
        if (flights.get(payment.id) === flight) flights.delete(payment.id);
      });
      flights.set(payment.id, flight);
      return flight;
    },
  };
}

export type PaymentLiveCheck = ReturnType<typeof createPaymentLiveCheck>;
