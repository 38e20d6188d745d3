import type { SecretCipher } from '../domain/secret-cipher.js';
import { deliveryBody, deliveryHeaders, type DeliveryMessage } from '../domain/webhook-message.js';
import { backoffDelayMs, listBackoff } from '../domain/backoff.js';
import type { AttemptOutcome, ClaimedDelivery, WebhookDeliveryRepository } from '../db/repositories/webhook-delivery.repository.js';
import type { WebhookHttpClient } from '../adapters/webhook-http.client.js';
import type { Logger } from '../domain/logger.port.js';
import type { Tracer } from '../domain/tracer.port.js';
import { parseTraceparent } from '../domain/trace-context.js';
import type { StaleLeaseReport } from '../domain/vocabulary.js';
import type { Clock } from '../domain/clock.port.js';

export type DeliveryResult = 'succeeded' | 'retry' | 'failed';

export interface AttemptReport {
  result: DeliveryResult;
  /** The attempt moved its webhook to the other lane (slow after a failure, normal after a success). */
  movedLane: boolean;
}

/** Sends one claimed delivery and records what happened; never throws for a receiver's fault. */
export function createWebhookDeliveryService(deps: {
  deliveries: WebhookDeliveryRepository;
  cipher: SecretCipher;
  http: WebhookHttpClient;
  retryScheduleMs: readonly number[];
  log: Logger;
  onResult?: (result: DeliveryResult) => void;
  /** An attempt outlived its claim and another instance took the delivery: its outcome was not recorded. */
  onStaleLease?: StaleLeaseReport;
  /** Each attempt is a span of the trace of the request that created its payment, and carries it as its traceparent. */
  tracer?: Tracer;
  now: Clock;
}) {
  const { now } = deps;
  const backoff = listBackoff(deps.retryScheduleMs);

  function failure(claim: ClaimedDelivery, statusCode: number | null, durationMs: number, error: string): AttemptOutcome {
    const delay = backoffDelayMs(backoff, claim.attempt);
    const nextAttemptAt = delay === null ? null : new Date(now().getTime() + delay);
    return { succeeded: false, statusCode, durationMs, error, nextAttemptAt };
  }

  /**
   * The secrets that sign this attempt, the current one first, as the claim read them just
   * before it: a rotation applies from the next attempt, and a rotated-out secret stops signing
   * when its grace ends.
   */
  function secretsOf(claim: ClaimedDelivery): [string, ...string[]] {
    const secrets: [string, ...string[]] = [deps.cipher.decrypt(claim.secretCiphertext)];
    if (claim.previousSecretCiphertext && claim.previousSecretExpiresAt && claim.previousSecretExpiresAt > now()) {
      secrets.push(deps.cipher.decrypt(claim.previousSecretCiphertext));
    }
    return secrets;
  }

  async function send(claim: ClaimedDelivery): Promise<AttemptOutcome> {
    const message: DeliveryMessage = { event: claim.event, eventId: claim.eventId, deliveryId: claim.id, createdAt: claim.eventCreatedAt, data: claim.data };
    const body = deliveryBody(message);
    const headers = { ...deliveryHeaders(message, body, secretsOf(claim), now()), ...deps.tracer?.outgoing() };
    const result = await deps.http.post(claim.url, body, headers);
    if (result.ok) return { succeeded: true, statusCode: result.statusCode, durationMs: result.durationMs };
    return failure(claim, result.statusCode, result.durationMs, result.error);
  }

  /** The attempt's span: in the trace of the request that created the payment; a fresh trace for an event of no payment. */
  function traced<T>(claim: ClaimedDelivery, fn: () => Promise<T>): Promise<T> {
    if (!deps.tracer) return fn();
    const attributes = { 'webhook.event': claim.event, 'webhook.attempt': claim.attempt, 'partner.id': claim.partnerId, ...(claim.paymentId ? { 'payment.id': claim.paymentId } : {}) };
    return deps.tracer.span('webhook delivery', { kind: 'producer', attributes, parent: parseTraceparent(claim.traceParent, claim.traceState) }, fn);
  }

  async function attempt(claim: ClaimedDelivery): Promise<AttemptReport> {
    let outcome: AttemptOutcome;
    try {
      outcome = await send(claim);
    } catch (err) {
      deps.log.error({ err, deliveryId: claim.id }, 'webhook delivery could not be prepared');
      outcome = failure(claim, null, 0, 'internal error preparing the delivery');
    }
    const finished = await deps.deliveries.finish(claim, outcome, now());
    if (!finished.recorded) deps.onStaleLease?.('webhook_attempt', claim.id);
    const result: DeliveryResult = outcome.succeeded ? 'succeeded' : outcome.nextAttemptAt ? 'retry' : 'failed';
    if (!outcome.succeeded) {
      const trace = deps.tracer?.active();
      deps.log.warn({ deliveryId: claim.id, webhookId: claim.webhookId, attempt: claim.attempt, error: outcome.error, result, traceId: trace?.traceId, spanId: trace?.spanId }, 'webhook delivery failed');
    }
    deps.onResult?.(result);
    return { result, movedLane: finished.movedLane };
  }

  return {
    attempt: (claim: ClaimedDelivery): Promise<AttemptReport> => traced(claim, () => attempt(claim)),
  };
}

export type WebhookDeliveryService = ReturnType<typeof createWebhookDeliveryService>;
