import { backoffDelayMs, listBackoff } from '../domain/backoff.js';
import type { PushSender } from '../adapters/push-sender.js';
import type { ClaimedPush, PushDeliveryRepository } from '../db/repositories/push-delivery.repository.js';
import type { Logger } from '../domain/logger.port.js';
import { systemClock, type Clock } from '../domain/clock.port.js';

/** What the end user's phone shows for an event; the data lets the partner's app open the payment. */
function messageFor(claim: ClaimedPush) {
  const paymentId = typeof claim.payload.id === 'string' ? claim.payload.id : '';
  const amount = typeof claim.payload.amount === 'number' ? claim.payload.amount.toLocaleString('en-US') : '';
  return {
    title: 'Төлбөр төлөгдлөө · Payment confirmed',
    body: amount ? `${amount} ₮` : 'Your payment is confirmed',
    data: { event: claim.event, paymentId },
  };
}

/**
 * Sends one claimed push through the configured sender (FCM, or the log without FCM settings)
 * and records the outcome, retrying on the webhooks' schedule.
 */
export function createPushDeliveryService(deps: { pushes: PushDeliveryRepository; sender: PushSender; retryScheduleMs: readonly number[]; log: Logger; now?: Clock }) {
  const now = deps.now ?? systemClock;
  const backoff = listBackoff(deps.retryScheduleMs);
  return {
    async attempt(claim: ClaimedPush): Promise<void> {
      try {
        await deps.sender.send(claim.fcmToken, messageFor(claim));
        await deps.pushes.finish(claim, { delivered: true }, now());
      } catch (err) {
        const error = err instanceof Error ? err.message : String(err);
        const delay = backoffDelayMs(backoff, claim.attempt);
        deps.log.warn({ pushId: claim.id, partnerId: claim.partnerId, attempt: claim.attempt, error }, 'push delivery failed');
        await deps.pushes.finish(claim, { delivered: false, error, nextAttemptAt: delay === null ? null : new Date(now().getTime() + delay) }, now());
      }
    },
  };
}

export type PushDeliveryService = ReturnType<typeof createPushDeliveryService>;
