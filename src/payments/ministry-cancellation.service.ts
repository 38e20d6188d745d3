import { checkBackoff, nextCheckDelayMs, type CheckSchedule } from '../domain/check-schedule.js';
import type { MinistryCancellationRepository, MinistryCancellationRow } from './ministry-cancellation.repository.js';
import type { MinistryAdapters } from '../domain/ministry.port.js';
import type { Logger } from '../domain/logger.port.js';
import type { CancellationKind, StaleLeaseReport } from '../domain/vocabulary.js';
import type { Clock } from '../domain/clock.port.js';

export interface MinistryCancellationServiceDeps {
  cancellations: MinistryCancellationRepository;
  ministries: MinistryAdapters;
  schedule: CheckSchedule;
  /** Closes a partner's or an expiry's cancel the ministry has confirmed: the payment's move and its event (payment-end.service). */
  finishIntent: (paymentId: string, kind: 'partner' | 'expiry') => Promise<void>;
  /** An attempt outlived its claim and another instance took the row: its failure was not recorded. */
  onStaleLease?: StaleLeaseReport;
  log: Logger;
  now: Clock;
}

/**
 * Cancels payments at the ministry: those the service refused after the ministry had accepted
 * them, those that expired, and those a partner canceled. Each attempt is recorded; a failed one is retried
 * on the check schedule until the ministry confirms, so no accepted payment is ever left able to
 * settle an invoice, and no partner's cancel is left half done.
 */
export function createMinistryCancellationService(deps: MinistryCancellationServiceDeps) {
  const { now } = deps;
  const backoff = checkBackoff(deps.schedule);

  return {
    /** One attempt; true when the ministry has confirmed the cancellation. */
    async attempt(row: Pick<MinistryCancellationRow, 'payment_id' | 'source' | 'ref_num' | 'attempts'> & { kind?: CancellationKind }): Promise<boolean> {
      const intent = row.kind === 'partner' || row.kind === 'expiry';
      try {
        const answer = await deps.ministries[row.source].cancelPayment({ paymentId: row.payment_id, refNum: row.ref_num });
        // An owed cancellation guards against a payment the ministry may hold: none held is as good
        // as one canceled. A partner's or an expiry's cancel needs the ministry's word that the payment
        // it holds is canceled, so an unknown one is tried again while the checks find out why.
        if (answer === 'unknown' && intent) throw new Error('the ministry has no record of the payment');
      } catch (err) {
        const retryAt = new Date(now().getTime() + nextCheckDelayMs(backoff, row.attempts));
        deps.log.warn({ err, paymentId: row.payment_id }, 'ministry cancellation failed; will retry');
        const kept = await deps.cancellations.markFailed(row.payment_id, err instanceof Error ? err.message : String(err), retryAt, row.attempts);
        if (!kept) deps.onStaleLease?.('ministry_cancellation', row.payment_id);
        return false;
      }
      if (row.kind === 'partner' || row.kind === 'expiry') await deps.finishIntent(row.payment_id, row.kind);
      else await deps.cancellations.markDone(row.payment_id, now());
      return true;
    },
  };
}

export type MinistryCancellationService = ReturnType<typeof createMinistryCancellationService>;
