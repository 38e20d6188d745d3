import { createHmac } from 'node:crypto';
import type { DeliveredEvent } from './vocabulary.js';


export interface DeliveryMessage {
  event: DeliveredEvent;
  deliveryId: string;
  createdAt: Date;
  data: Record<string, unknown>;
}

/** The exact bytes sent; built from stored rows only, so every retry carries the same body. */
export function deliveryBody(m: DeliveryMessage): string {
  return JSON.stringify({ event: m.event, deliveryId: m.deliveryId, createdAt: m.createdAt.toISOString(), data: m.data });
}

/** Lowercase hex HMAC-SHA256 of the body bytes, keyed with the partner's webhook secret. */
export function signBody(secret: string, body: string): string {
  return createHmac('sha256', secret).update(body, 'utf8').digest('hex');
}

export function deliveryHeaders(m: DeliveryMessage, body: string, secret: string, sentAt: Date): Record<string, string> {
  return {
    'content-type': 'application/json',
    'user-agent': 'gov-payment-channel-webhooks/1',
    'x-service-event': m.event,
    'x-service-delivery': m.deliveryId,
    'x-service-timestamp': String(Math.floor(sentAt.getTime() / 1000)),
    'x-service-signature': signBody(secret, body),
  };
}
