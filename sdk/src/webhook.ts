import { createHmac, timingSafeEqual } from 'node:crypto';
import type { WebhookMessage } from './types.js';

const SIGNATURE = /^[0-9a-fA-F]{64}$/;

/**
 * Checks `X-Service-Signature`: the lowercase hex HMAC-SHA256 of the exact body bytes, keyed
 * with the secret given at registration. Pass the raw body as received (before any JSON
 * parsing); re-serialised JSON will not match. Compares in constant time; false when the
 * signature is missing or malformed.
 */
export function verifyWebhook(body: string | Buffer, signature: string | undefined, secret: string): boolean {
  if (typeof signature !== 'string' || !SIGNATURE.test(signature) || secret === '') return false;
  const expected = createHmac('sha256', secret).update(body).digest();
  const given = Buffer.from(signature, 'hex');
  return given.length === expected.length && timingSafeEqual(given, expected);
}

export class WebhookVerificationError extends Error {
  override name = 'WebhookVerificationError';
}

/**
 * Verifies the signature, then parses the body. Throws WebhookVerificationError on a bad
 * signature or an unreadable body. Deliveries are at-least-once: deduplicate by `data.id`
 * (or by `deliveryId`, which is the same across retries of one delivery).
 */
export function parseWebhook(body: string | Buffer, signature: string | undefined, secret: string): WebhookMessage {
  if (!verifyWebhook(body, signature, secret)) throw new WebhookVerificationError('invalid webhook signature');
  let parsed: unknown;
  try {
    parsed = JSON.parse(typeof body === 'string' ? body : body.toString('utf8'));
  } catch (cause) {
    throw new WebhookVerificationError('webhook body is not JSON', { cause });
  }
  if (typeof parsed !== 'object' || parsed === null || typeof (parsed as { event?: unknown }).event !== 'string') {
    throw new WebhookVerificationError('webhook body has no event');
  }
  return parsed as WebhookMessage;
}
