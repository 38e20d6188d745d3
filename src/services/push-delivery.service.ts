import { backoffDelayMs, listBackoff } from '../domain/backoff.js';
import type { PushSender } from '../adapters/push-sender.js';
import type { ClaimedPush, PushDeliveryRepository, PushOutcome } from '../db/repositories/push-delivery.repository.js';
import type { Logger } from '../domain/logger.port.js';
import type { Tracer } from '../domain/tracer.port.js';
import { parseTraceparent } from '../domain/trace-context.js';
import type { StaleLeaseReport } from '../domain/vocabulary.js';
import type { Clock } from '../domain/clock.port.js';

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

/** What became of one attempt: as `push_deliveries_total{outcome}` counts it. */
export type PushResult = 'delivered' | 'skipped' | 'retry' | 'failed';

/**
 * Sends one claimed push through the configured sender (FCM, or the log without FCM settings)
 * and records the outcome, retrying on the webhooks' schedule; a push the log took is `skipped`,
 * never `delivered`, since nothing was sent.
 */
export interface PushDeliveryServiceDeps {
  pushes: PushDeliveryRepository;
  sender: PushSender;
  retryScheduleMs: readonly number[];
  log: Logger;
  /** A push outlived its claim and another instance took it: its outcome was not recorded. */
  onStaleLease?: StaleLeaseReport;
  onResult?: (result: PushResult) => void;
  /** Each attempt is a span of the trace of the request that created its payment. */
  tracer?: Tracer;
  now: Clock;
}

export function createPushDeliveryService(deps: PushDeliveryServiceDeps) {
  const { now } = deps;
  const backoff = listBackoff(deps.retryScheduleMs);

  function traced<T>(claim: ClaimedPush, fn: () => Promise<T>): Promise<T> {
    if (!deps.tracer) return fn();
    const attributes = { 'push.event': claim.event, 'partner.id': claim.partnerId, ...(claim.paymentId ? { 'payment.id': claim.paymentId } : {}) };
    return deps.tracer.span('push delivery', { kind: 'producer', attributes, parent: parseTraceparent(claim.traceParent, claim.traceState) }, fn);
  }

  async function attempt(claim: ClaimedPush): Promise<PushResult> {
    let outcome: PushOutcome;
    try {
      outcome = (await deps.sender.send(claim.fcmToken, messageFor(claim))) === 'skipped' ? { skipped: true } : { delivered: true };
    } catch (err) {
      const error = err instanceof Error ? err.message : String(err);
      const delay = backoffDelayMs(backoff, claim.attempt);
      const trace = deps.tracer?.active();
      deps.log.warn({ pushId: claim.id, partnerId: claim.partnerId, attempt: claim.attempt, error, traceId: trace?.traceId, spanId: trace?.spanId }, 'push delivery failed');
      outcome = { delivered: false, error, nextAttemptAt: delay === null ? null : new Date(now().getTime() + delay) };
    }
    if (!(await deps.pushes.finish(claim, outcome, now()))) deps.onStaleLease?.('push_attempt', claim.id);
    const result: PushResult = 'skipped' in outcome ? 'skipped' : outcome.delivered ? 'delivered' : outcome.nextAttemptAt ? 'retry' : 'failed';
    deps.onResult?.(result);
    return result;
  }

  return {
    attempt: (claim: ClaimedPush): Promise<PushResult> => traced(claim, () => attempt(claim)),
  };
}

export type PushDeliveryService = ReturnType<typeof createPushDeliveryService>;
