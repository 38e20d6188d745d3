import { createHmac } from 'node:crypto';
import type { DeliveredEvent } from './vocabulary.js';

export interface DeliveryMessage {
  event: DeliveredEvent;
  /** The event's id: the same in every delivery of the event, to each webhook, on every retry. */
  eventId: string;
  deliveryId: string;
  createdAt: Date;
  data: Record<string, unknown>;
}

/** The exact bytes sent; built from stored rows only, so every retry carries the same body. */
export function deliveryBody(m: DeliveryMessage): string {
  return JSON.stringify({ event: m.event, eventId: m.eventId, deliveryId: m.deliveryId, createdAt: m.createdAt.toISOString(), data: m.data });
}

/** Lowercase hex HMAC-SHA256 of the body bytes, keyed with the partner's webhook secret. */
export function signBody(secret: string, body: string): string {
  return createHmac('sha256', secret).update(body, 'utf8').digest('hex');
}

/**
 * A Standard Webhooks signature: `v1,` and the base64 HMAC-SHA256 of `{id}.{timestamp}.{body}`,
 * keyed with the UTF-8 bytes of the secret. Covering the id and the timestamp is what lets a
 * receiver refuse a captured delivery replayed later.
 */
export function standardSignature(secret: string, webhookId: string, timestamp: string, body: string): string {
  return `v1,${createHmac('sha256', secret).update(`${webhookId}.${timestamp}.${body}`, 'utf8').digest('base64')}`;
}

/**
 * The headers of one attempt. `secrets` are the webhook's valid secrets, the current one first:
 * `X-Service-Signature` is the current one's, `webhook-signature` carries one signature per secret
 * (two during a rotation's grace period), so a receiver that knows either accepts the delivery.
 */
export function deliveryHeaders(m: DeliveryMessage, body: string, secrets: readonly [string, ...string[]], sentAt: Date): Record<string, string> {
  const timestamp = String(Math.floor(sentAt.getTime() / 1000));
  return {
    'content-type': 'application/json',
    'user-agent': 'gov-payment-channel-webhooks/1',
    'x-service-event': m.event,
    'x-service-delivery': m.deliveryId,
    'x-service-timestamp': timestamp,
    'x-service-signature': signBody(secrets[0], body),
    'webhook-id': m.eventId,
    'webhook-timestamp': timestamp,
    'webhook-signature': secrets.map((secret) => standardSignature(secret, m.eventId, timestamp, body)).join(' '),
  };
}
