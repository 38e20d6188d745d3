/*
 * The synchronous verifier of earlier SDK versions, on node:crypto, kept as it was for the code
 * that calls it (exported from the package root under its old names). New code, and every runtime
 * other than Node, should use the Web Crypto verifier of webhook.ts: `verifyWebhookRequestAsync`
 * and friends. Both accept and refuse the same deliveries (test/sdk/webhook-web-crypto.test.ts).
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { WebhookMessage } from './types.js';
import { HEX_SIGNATURE, WebhookVerificationError, headerOf, parseWebhookBody, secretList, standardHeaders, type WebhookHeaders, type WebhookRequestOptions, type WebhookSecrets } from './webhook-common.js';

export { WebhookVerificationError };
export type { WebhookHeaders, WebhookRequestOptions, WebhookSecrets };

function sameBytes(a: Buffer, b: Buffer): boolean {
  return a.length === b.length && timingSafeEqual(a, b);
}

/**
 * Checks `X-Service-Signature`: the lowercase hex HMAC-SHA256 of the exact body bytes, keyed
 * with the UTF-8 bytes of the secret given at registration (whatever its form). Pass the raw body
 * as received (before any JSON parsing); re-serialised JSON will not match. Takes a list of
 * secrets too, and accepts a signature of any of them: during a rotation, pass the old and the
 * new one. Compares in constant time; false when the signature is missing or malformed.
 * Synchronous, Node only: `verifyWebhookAsync` is the same check on Web Crypto.
 */
export function verifyWebhook(body: string | Buffer, signature: string | undefined, secrets: WebhookSecrets): boolean {
  if (typeof signature !== 'string' || !HEX_SIGNATURE.test(signature)) return false;
  const given = Buffer.from(signature, 'hex');
  return secretList(secrets).some((secret) => sameBytes(given, createHmac('sha256', secret).update(body).digest()));
}

/**
 * Verifies the signature, then parses the body. Throws WebhookVerificationError on a bad
 * signature or an unreadable body. Deliveries are at-least-once: deduplicate by `eventId`
 * (or by `deliveryId`, which is the same across retries of one delivery).
 */
export function parseWebhook(body: string | Buffer, signature: string | undefined, secrets: WebhookSecrets): WebhookMessage {
  if (!verifyWebhook(body, signature, secrets)) throw new WebhookVerificationError('invalid webhook signature');
  return parseWebhookBody(body);
}

const STANDARD_SECRET = /^whsec_((?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?)$/;

/**
 * The key of `webhook-signature`, as the Standard Webhooks specification has it: the decoded
 * bytes of a `whsec_` secret followed by standard base64 (with padding) of 24 to 64 bytes, the
 * UTF-8 bytes of any other secret.
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
 * Checks a delivery the Standard Webhooks way and the service's own way together: the
 * `webhook-timestamp` is within `toleranceSeconds` of now (a captured delivery replayed later
 * fails), one of the `v1,` signatures of `webhook-signature` is the HMAC-SHA256 of
 * `{webhook-id}.{webhook-timestamp}.{body}` under one of `secrets` (keyed as standardSigningKey
 * says), and `X-Service-Signature`, when sent, is the body's under one of them; either header may
 * match either secret. Pass the raw body. To rotate without a refused delivery, pass the old and
 * the new secret from before the rotation until the old one's grace ends: `X-Service-Signature`
 * is the new one's from the rotation on, `webhook-signature` carries both meanwhile.
 * Synchronous, Node only: `verifyWebhookRequestAsync` is the same check on Web Crypto.
 */
export function verifyWebhookRequest(body: string | Buffer, headers: WebhookHeaders, secrets: WebhookSecrets, options: WebhookRequestOptions = {}): boolean {
  const keys = secretList(secrets);
  const standard = standardHeaders(headers, options);
  if (keys.length === 0 || standard === undefined) return false;
  const signed = Buffer.concat([Buffer.from(`${standard.id}.${standard.timestamp}.`, 'utf8'), typeof body === 'string' ? Buffer.from(body, 'utf8') : body]);
  const expected = keys.map((key) => createHmac('sha256', standardSigningKey(key)).update(signed).digest());
  const given = standard.signatures.map((s) => Buffer.from(s, 'base64'));
  if (!given.some((g) => expected.some((e) => sameBytes(g, e)))) return false;
  const bodySignature = headerOf(headers, 'x-service-signature');
  return bodySignature === undefined || keys.some((key) => verifyWebhook(body, bodySignature, key));
}

/** verifyWebhookRequest, then the parsed body; throws WebhookVerificationError when either fails. */
export function parseWebhookRequest(body: string | Buffer, headers: WebhookHeaders, secrets: WebhookSecrets, options: WebhookRequestOptions = {}): WebhookMessage {
  if (!verifyWebhookRequest(body, headers, secrets, options)) throw new WebhookVerificationError('invalid webhook signature or stale timestamp');
  return parseWebhookBody(body);
}
