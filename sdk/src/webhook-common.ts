/*
 * What both webhook verifiers share: the types they take, their error, reading headers and the
 * body. Web platform only (TextEncoder, TextDecoder, atob, btoa): no `node:` import, no Buffer.
 */
import type { WebhookMessage } from './types.js';

/** One secret, or several: during a rotation, the old and the new one. */
export type WebhookSecrets = string | readonly string[];

/** The raw body as received: text, or its bytes (a Node `Buffer` is a `Uint8Array`). */
export type WebhookBody = string | Uint8Array | ArrayBuffer;

/** Request headers as Node's `req.headers` or a fetch `Headers`; names in any case. */
export type WebhookHeaders = Record<string, string | string[] | undefined> | { get(name: string): string | null };

export interface WebhookRequestOptions {
  /** How far `webhook-timestamp` may be from now, either way. Default 300 (5 minutes). */
  toleranceSeconds?: number;
  /** The clock to judge the timestamp by. Default `() => new Date()`. */
  now?: () => Date;
}

export class WebhookVerificationError extends Error {
  override name = 'WebhookVerificationError';
}

export const DEFAULT_TOLERANCE_SECONDS = 300;

/** `X-Service-Signature`: lowercase (or uppercase) hex of 32 bytes. */
export const HEX_SIGNATURE = /^[0-9a-fA-F]{64}$/;

/** `whsec_` and standard base64 with its padding, as the Standard Webhooks specification writes a secret. */
const STANDARD_SECRET = /^whsec_((?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?)$/;

export const secretList = (secrets: WebhookSecrets): string[] => (typeof secrets === 'string' ? [secrets] : [...secrets]).filter((s) => s !== '');

export function headerOf(headers: WebhookHeaders, name: string): string | undefined {
  if (typeof headers.get === 'function') return (headers as { get(name: string): string | null }).get(name) ?? undefined;
  const record = headers as Record<string, string | string[] | undefined>;
  const key = Object.keys(record).find((k) => k.toLowerCase() === name);
  const value = key === undefined ? undefined : record[key];
  return Array.isArray(value) ? value[0] : value;
}

/** The Standard Webhooks headers, when present, well formed and `webhook-timestamp` within the tolerance. */
export function standardHeaders(headers: WebhookHeaders, options: WebhookRequestOptions): { id: string; timestamp: string; signatures: string[] } | undefined {
  const id = headerOf(headers, 'webhook-id');
  const timestamp = headerOf(headers, 'webhook-timestamp');
  const signatures = headerOf(headers, 'webhook-signature');
  if (!id || !timestamp || !/^\d{1,15}$/.test(timestamp) || !signatures) return undefined;
  const nowSeconds = (options.now ?? (() => new Date()))().getTime() / 1000;
  if (Math.abs(nowSeconds - Number(timestamp)) > (options.toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS)) return undefined;
  return { id, timestamp, signatures: signatures.split(' ').filter((s) => s.startsWith('v1,')).map((s) => s.slice(3)) };
}

const encoder = new TextEncoder();

/** A copy of the body's bytes (on an ArrayBuffer of its own, as Web Crypto wants). */
export function bytesOf(body: WebhookBody): Uint8Array<ArrayBuffer> {
  if (typeof body === 'string') return encoder.encode(body);
  return new Uint8Array(body instanceof Uint8Array ? body : new Uint8Array(body));
}

export const utf8 = (text: string): Uint8Array<ArrayBuffer> => encoder.encode(text);

/** Standard base64 to bytes; undefined when it is not base64. */
export function base64Bytes(text: string): Uint8Array<ArrayBuffer> | undefined {
  let binary: string;
  try {
    binary = atob(text);
  } catch {
    return undefined;
  }
  return Uint8Array.from(binary, (c) => c.charCodeAt(0));
}

export function hexBytes(hex: string): Uint8Array<ArrayBuffer> {
  const bytes = new Uint8Array(hex.length / 2);
  for (let i = 0; i < bytes.length; i++) bytes[i] = Number.parseInt(hex.slice(2 * i, 2 * i + 2), 16);
  return bytes;
}

/**
 * The key of `webhook-signature`, as the Standard Webhooks specification has it: the decoded
 * bytes of a `whsec_` secret followed by standard base64 (with padding) of 24 to 64 bytes, the
 * UTF-8 bytes of any other secret.
 */
export function standardKeyBytes(secret: string): Uint8Array<ArrayBuffer> {
  const encoded = STANDARD_SECRET.exec(secret)?.[1];
  if (encoded !== undefined) {
    const decoded = base64Bytes(encoded);
    if (decoded !== undefined && decoded.length >= 24 && decoded.length <= 64 && btoa(String.fromCharCode(...decoded)) === encoded) return decoded;
  }
  return utf8(secret);
}

/** Parses a verified body; an event type this SDK does not know passes through as it is. */
export function parseWebhookBody(body: WebhookBody): WebhookMessage {
  let parsed: unknown;
  try {
    parsed = JSON.parse(typeof body === 'string' ? body : new TextDecoder().decode(body));
  } catch (cause) {
    throw new WebhookVerificationError('webhook body is not JSON', { cause });
  }
  if (typeof parsed !== 'object' || parsed === null || typeof (parsed as { event?: unknown }).event !== 'string') {
    throw new WebhookVerificationError('webhook body has no event');
  }
  return parsed as WebhookMessage;
}
