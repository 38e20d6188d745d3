import { createSign } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { request } from 'undici';
import { readBoundedText, ResponseTooLargeError } from './bounded-body.helper.js';
import type { Clock } from '../domain/clock.port.js';

/** The scope FCM HTTP v1 asks of an OAuth access token. */
export const FCM_SCOPE = 'https://www.googleapis.com/auth/firebase.messaging';
const GOOGLE_TOKEN_URI = 'https://oauth2.googleapis.com/token';
/** Google's ceiling for a self-signed assertion's life, and what it grants an access token. */
const ASSERTION_LIFETIME_S = 3600;
/** A token this close to its expiry is replaced before use: a send must not outlive it. */
const REFRESH_MARGIN_MS = 5 * 60_000;
/**
 * The most bytes of a token endpoint's answer read: Google's is an access token of a few hundred
 * bytes and two numbers, so anything near this is not a token answer, and past it the mint fails
 * without having held more.
 */
export const TOKEN_ANSWER_MAX_BYTES = 64 * 1024;

/** What the service uses of the JSON key Firebase issues for a service account. */
export interface ServiceAccount {
  projectId: string | null;
  clientEmail: string;
  privateKey: string;
  tokenUri: string;
}

export class FcmCredentialsError extends Error {
  override name = 'FcmCredentialsError';
}

/** Reads the service account key file; refuses one without what a token needs, so a bad file stops the start. */
export async function loadServiceAccount(path: string): Promise<ServiceAccount> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(await readFile(path, 'utf8'));
  } catch (cause) {
    throw new FcmCredentialsError(`FCM_SERVICE_ACCOUNT_FILE ${path}: not a readable JSON file`, { cause });
  }
  const key = (parsed ?? {}) as Record<string, unknown>;
  const text = (name: string) => (typeof key[name] === 'string' && key[name] !== '' ? (key[name] as string) : null);
  const clientEmail = text('client_email');
  const privateKey = text('private_key');
  if (key.type !== 'service_account' || !clientEmail || !privateKey) {
    throw new FcmCredentialsError(`FCM_SERVICE_ACCOUNT_FILE ${path}: not a service account key (type "service_account", client_email and private_key)`);
  }
  return { projectId: text('project_id'), clientEmail, privateKey, tokenUri: text('token_uri') ?? GOOGLE_TOKEN_URI };
}

/** Where the FCM sender gets the bearer token of each send. */
export interface AccessTokenSource {
  token(): Promise<string>;
  /** FCM refused this token (401): the next token() mints another instead of reusing it. */
  refused(token: string): void;
}

/** A token given as it is (FCM_ACCESS_TOKEN): Google expires it after about an hour and nothing renews it. */
export function staticAccessToken(token: string): AccessTokenSource {
  return { token: () => Promise.resolve(token), refused: () => undefined };
}

const base64url = (value: string | Buffer) => Buffer.from(value).toString('base64url');

/** The RS256-signed assertion of the OAuth 2.0 JWT bearer grant (RFC 7523) that Google's token endpoint takes. */
export function serviceAccountAssertion(account: ServiceAccount, at: Date): string {
  const iat = Math.floor(at.getTime() / 1000);
  const header = base64url(JSON.stringify({ alg: 'RS256', typ: 'JWT' }));
  const claims = base64url(JSON.stringify({ iss: account.clientEmail, scope: FCM_SCOPE, aud: account.tokenUri, iat, exp: iat + ASSERTION_LIFETIME_S }));
  const signature = createSign('RSA-SHA256').update(`${header}.${claims}`).sign(account.privateKey);
  return `${header}.${claims}.${base64url(signature)}`;
}

/**
 * Access tokens minted from a service account and kept until shortly before they expire; one
 * mint at a time, shared by the sends that wait for it.
 */
export function serviceAccountAccessTokens(account: ServiceAccount, opts: { timeoutMs: number; now: Clock }): AccessTokenSource {
  const { now } = opts;
  let current: { token: string; refreshAt: number } | null = null;
  let minting: Promise<string> | null = null;

  async function mint(): Promise<string> {
    const issuedAt = now();
    const form = new URLSearchParams({ grant_type: 'urn:ietf:params:oauth:grant-type:jwt-bearer', assertion: serviceAccountAssertion(account, issuedAt) });
    const res = await request(account.tokenUri, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: form.toString(),
      signal: AbortSignal.timeout(opts.timeoutMs),
    });
    if (res.statusCode < 200 || res.statusCode >= 300) {
      // dump() discards what it reads and closes the connection past 128 KiB.
      await res.body.dump();
      throw new Error(`the OAuth token endpoint answered HTTP ${res.statusCode}`);
    }
    const text = await readBoundedText(res, TOKEN_ANSWER_MAX_BYTES).catch((cause: unknown) => {
      throw cause instanceof ResponseTooLargeError ? new Error(`the OAuth token endpoint's ${cause.message}`, { cause }) : cause;
    });
    const body = JSON.parse(text) as { access_token?: unknown; expires_in?: unknown };
    if (typeof body.access_token !== 'string' || body.access_token === '') throw new Error('the OAuth token endpoint answered without an access_token');
    const lifetimeMs = (typeof body.expires_in === 'number' ? body.expires_in : ASSERTION_LIFETIME_S) * 1000;
    current = { token: body.access_token, refreshAt: issuedAt.getTime() + Math.max(0, lifetimeMs - REFRESH_MARGIN_MS) };
    return body.access_token;
  }

  return {
    token() {
      if (current && now().getTime() < current.refreshAt) return Promise.resolve(current.token);
      minting ??= mint().finally(() => {
        minting = null;
      });
      return minting;
    },
    refused(token) {
      if (current?.token === token) current = null;
    },
  };
}
