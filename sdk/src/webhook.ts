/*
 * The webhook verifier on Web Crypto only (`globalThis.crypto.subtle`): no `node:` import and no
 * Buffer, here or in what it imports, so the same code runs in Node 20+, Deno, Bun, Cloudflare
 * Workers and other fetch-style runtimes (`@gov-payment-channel/sdk/webhook` is this module
 * alone). Web Crypto is asynchronous, so these checks return promises; `crypto.subtle.verify`
 * compares the HMAC in constant time. The synchronous `verifyWebhook` family of earlier versions
 * stays, on node:crypto, in webhook-node.ts (exported from the package root as before).
 */
import type { WebhookMessage } from './types.js';
import {
  HEX_SIGNATURE,
  WebhookVerificationError,
  base64Bytes,
  bytesOf,
  headerOf,
  hexBytes,
  parseWebhookBody,
  secretList,
  standardHeaders,
  standardKeyBytes,
  utf8,
  type WebhookBody,
  type WebhookHeaders,
  type WebhookRequestOptions,
  type WebhookSecrets,
} from './webhook-common.js';

export { WebhookVerificationError };
export type { WebhookBody, WebhookHeaders, WebhookRequestOptions, WebhookSecrets };
export type { KnownWebhookMessage, UnknownEventName, UnknownWebhookMessage, WebhookEventData, WebhookMessage, WebhookTestData } from './types.js';

function subtle(): SubtleCrypto {
  const webCrypto = (globalThis as { crypto?: { subtle?: SubtleCrypto } }).crypto?.subtle;
  if (!webCrypto) throw new Error('Web Crypto (globalThis.crypto.subtle) is not available in this runtime');
  return webCrypto;
}

const hmacKey = (key: Uint8Array<ArrayBuffer>): Promise<CryptoKey> => subtle().importKey('raw', key, { name: 'HMAC', hash: 'SHA-256' }, false, ['verify']);

/** Whether `signature` is the HMAC-SHA256 of `data` under `key`; constant-time (Web Crypto's own comparison). */
const hmacMatches = async (key: CryptoKey, signature: Uint8Array<ArrayBuffer>, data: Uint8Array<ArrayBuffer>): Promise<boolean> => subtle().verify('HMAC', key, signature, data);

/**
 * Checks `X-Service-Signature`: the lowercase hex HMAC-SHA256 of the exact body bytes, keyed
 * with the UTF-8 bytes of the secret given at registration (whatever its form). Pass the raw body
 * as received (before any JSON parsing); re-serialised JSON will not match. Takes a list of
 * secrets too, and accepts a signature of any of them. Resolves false when the signature is
 * missing or malformed.
 */
export async function verifyWebhookAsync(body: WebhookBody, signature: string | null | undefined, secrets: WebhookSecrets): Promise<boolean> {
  if (typeof signature !== 'string' || !HEX_SIGNATURE.test(signature)) return false;
  const given = hexBytes(signature);
  const data = bytesOf(body);
  for (const secret of secretList(secrets)) {
    if (await hmacMatches(await hmacKey(utf8(secret)), given, data)) return true;
  }
  return false;
}

/** verifyWebhookAsync, then the parsed body; rejects with WebhookVerificationError when either fails. */
export async function parseWebhookAsync(body: WebhookBody, signature: string | null | undefined, secrets: WebhookSecrets): Promise<WebhookMessage> {
  if (!(await verifyWebhookAsync(body, signature, secrets))) throw new WebhookVerificationError('invalid webhook signature');
  return parseWebhookBody(body);
}

/**
 * Checks a delivery the Standard Webhooks way and the service's own way together: the
 * `webhook-timestamp` is within `toleranceSeconds` (default 300) of now, so a captured delivery
 * replayed later fails; one of the `v1,` signatures of `webhook-signature` is the HMAC-SHA256 of
 * `{webhook-id}.{webhook-timestamp}.{body}` under one of `secrets` (keyed with the decoded bytes
 * of a `whsec_` secret in the Standard Webhooks form, the UTF-8 bytes of any other); and
 * `X-Service-Signature`, when sent, is the body's under one of them. Either header may match
 * either secret: during a rotation pass the old and the new one. Pass the raw body, and Node's
 * `req.headers` or a fetch `Headers`.
 */
export async function verifyWebhookRequestAsync(body: WebhookBody, headers: WebhookHeaders, secrets: WebhookSecrets, options: WebhookRequestOptions = {}): Promise<boolean> {
  const keys = secretList(secrets);
  const standard = standardHeaders(headers, options);
  if (keys.length === 0 || standard === undefined) return false;
  const given = standard.signatures.map(base64Bytes).filter((s): s is Uint8Array<ArrayBuffer> => s !== undefined);
  const bodyBytes = bytesOf(body);
  const prefix = utf8(`${standard.id}.${standard.timestamp}.`);
  const signed = new Uint8Array(prefix.length + bodyBytes.length);
  signed.set(prefix);
  signed.set(bodyBytes, prefix.length);
  let matched = false;
  for (const secret of keys) {
    const key = await hmacKey(standardKeyBytes(secret));
    for (const signature of given) if (!matched && (await hmacMatches(key, signature, signed))) matched = true;
  }
  if (!matched) return false;
  const bodySignature = headerOf(headers, 'x-service-signature');
  return bodySignature === undefined || verifyWebhookAsync(bodyBytes, bodySignature, keys);
}

/** verifyWebhookRequestAsync, then the parsed body; rejects with WebhookVerificationError when either fails. */
export async function parseWebhookRequestAsync(body: WebhookBody, headers: WebhookHeaders, secrets: WebhookSecrets, options: WebhookRequestOptions = {}): Promise<WebhookMessage> {
  if (!(await verifyWebhookRequestAsync(body, headers, secrets, options))) throw new WebhookVerificationError('invalid webhook signature or stale timestamp');
  return parseWebhookBody(body);
}
