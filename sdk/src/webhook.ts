import { createHmac, timingSafeEqual } from 'node:crypto';
import type { WebhookMessage } from './types.js';

const SIGNATURE = /^[0-9a-fA-F]{64}$/;

/** One secret, or several: during a rotation, the old and the new one. */
export type WebhookSecrets = string | readonly string[];

const secretList = (secrets: WebhookSecrets): string[] => (typeof secrets === 'string' ? [secrets] : [...secrets]).filter((s) => s !== '');

/**
 * Checks `X-Service-Signature`: the lowercase hex HMAC-SHA256 of the exact body bytes, keyed
 * with the UTF-8 bytes of the secret given at registration (whatever its form). Pass the raw body
 * as received (before any JSON parsing); re-serialised JSON will not match. Takes a list of
 * secrets too, and accepts a signature of any of them: during a rotation, pass the old and the
 * new one. Compares in constant time; false when the signature is missing or malformed.
 */
export function verifyWebhook(body: string | Buffer, signature: string | undefined, secrets: WebhookSecrets): boolean {
  if (typeof signature !== 'string' || !SIGNATURE.test(signature)) return false;
  const given = Buffer.from(signature, 'hex');
  return secretList(secrets).some((secret) => sameBytes(given, createHmac('sha256', secret).update(body).digest()));
}

export class WebhookVerificationError extends Error {
  override name = 'WebhookVerificationError';
}

/**
 * Verifies the signature, then parses the body. Throws WebhookVerificationError on a bad
 * signature or an unreadable body. Deliveries are at-least-once: deduplicate by `data.id`
 * (or by `deliveryId`, which is the same across retries of one delivery).
 */
export function parseWebhook(body: string | Buffer, signature: string | undefined, secrets: WebhookSecrets): WebhookMessage {
  if (!verifyWebhook(body, signature, secrets)) throw new WebhookVerificationError('invalid webhook signature');
  return parseBody(body);
}

function parseBody(body: string | Buffer): WebhookMessage {
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

/** Request headers as Node's `req.headers` or a fetch `Headers`; names in any case. */
export type WebhookHeaders = Record<string, string | string[] | undefined> | { get(name: string): string | null };

export interface WebhookRequestOptions {
  /** How far `webhook-timestamp` may be from now, either way. Default 300 (5 minutes). */
  toleranceSeconds?: number;
  /** The clock to judge the timestamp by. Default `() => new Date()`. */
  now?: () => Date;
}

const DEFAULT_TOLERANCE_SECONDS = 300;

function sameBytes(a: Buffer, b: Buffer): boolean {
  return a.length === b.length && timingSafeEqual(a, b);
}

function headerOf(headers: WebhookHeaders, name: string): string | undefined {
  if (typeof headers.get === 'function') return (headers as { get(name: string): string | null }).get(name) ?? undefined;
  const record = headers as Record<string, string | string[] | undefined>;
  const key = Object.keys(record).find((k) => k.toLowerCase() === name);
  const value = key === undefined ? undefined : record[key];
  return Array.isArray(value) ? value[0] : value;
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
 */
export function verifyWebhookRequest(body: string | Buffer, headers: WebhookHeaders, secrets: WebhookSecrets, options: WebhookRequestOptions = {}): boolean {
  const keys = secretList(secrets);
  const id = headerOf(headers, 'webhook-id');
  const timestamp = headerOf(headers, 'webhook-timestamp');
  const signatures = headerOf(headers, 'webhook-signature');
  if (keys.length === 0 || !id || !timestamp || !/^\d{1,15}$/.test(timestamp) || !signatures) return false;
  const nowSeconds = (options.now ?? (() => new Date()))().getTime() / 1000;
  if (Math.abs(nowSeconds - Number(timestamp)) > (options.toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS)) return false;
  const signed = Buffer.concat([Buffer.from(`${id}.${timestamp}.`, 'utf8'), typeof body === 'string' ? Buffer.from(body, 'utf8') : body]);
  const expected = keys.map((key) => createHmac('sha256', standardSigningKey(key)).update(signed).digest());
  const given = signatures
    .split(' ')
    .filter((s) => s.startsWith('v1,'))
    .map((s) => Buffer.from(s.slice(3), 'base64'));
  if (!given.some((g) => expected.some((e) => sameBytes(g, e)))) return false;
  const bodySignature = headerOf(headers, 'x-service-signature');
  return bodySignature === undefined || keys.some((key) => verifyWebhook(body, bodySignature, key));
}

/** verifyWebhookRequest, then the parsed body; throws WebhookVerificationError when either fails. */
export function parseWebhookRequest(body: string | Buffer, headers: WebhookHeaders, secrets: WebhookSecrets, options: WebhookRequestOptions = {}): WebhookMessage {
  if (!verifyWebhookRequest(body, headers, secrets, options)) throw new WebhookVerificationError('invalid webhook signature or stale timestamp');
  return parseBody(body);
}
