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

/** Lowercase hex HMAC-SHA256 of the body bytes, keyed with the UTF-8 bytes of the partner's webhook secret (whatever its form). */
export function signBody(secret: string, body: string): string {
  return createHmac('sha256', secret).update(body, 'utf8').digest('hex');
}

/** `whsec_` and standard base64 with its padding, as the Standard Webhooks specification writes a secret. */
const STANDARD_SECRET = /^whsec_((?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?)$/;

/**
 * The key of `webhook-signature`: the base64-decoded bytes of a `whsec_` secret whose rest is
 * standard base64 decoding to 24 to 64 bytes (the specification's form, which its libraries take
 * as it is), and the UTF-8 bytes of any other secret. A secret that only looks like the form
 * (base64url, a wrong length, bits past the end) keeps its UTF-8 bytes, as before the rule.
 */
export function standardSigningKey(secret: string): Buffer {
  const encoded = STANDARD_SECRET.exec(secret)?.[1];
  if (encoded !== undefined) {
    const decoded = Buffer.from(encoded, 'base64');
    if (decoded.length >= 24 && decoded.length <= 64 && decoded.toString('base64') === encoded) return decoded;
  }
  return Buffer.from(secret, 'utf8');
}

/**
 * A Standard Webhooks signature: `v1,` and the base64 HMAC-SHA256 of `{id}.{timestamp}.{body}`,
 * keyed as standardSigningKey says. Covering the id and the timestamp is what lets a receiver
 * refuse a captured delivery replayed later.
 */
export function standardSignature(secret: string, webhookId: string, timestamp: string, body: string): string {
  return `v1,${createHmac('sha256', standardSigningKey(secret)).update(`${webhookId}.${timestamp}.${body}`, 'utf8').digest('base64')}`;
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
