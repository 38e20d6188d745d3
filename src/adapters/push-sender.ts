import { request } from 'undici';
import { discardBounded, ResponseTooLargeError } from './bounded-body.helper.js';
import type { Logger } from '../domain/logger.port.js';
import type { Clock } from '../domain/clock.port.js';
import { loadServiceAccount, serviceAccountAccessTokens, staticAccessToken, type AccessTokenSource } from './fcm-access-token.client.js';

export interface PushMessage {
  title: string;
  body: string;
  /** FCM data payloads are string maps. */
  data?: Record<string, string>;
}

/** `sent`: FCM took the message; `skipped`: nothing left the process (no FCM credentials). */
export type PushSendResult = 'sent' | 'skipped';

export interface PushSender {
  readonly kind: 'log' | 'fcm';
  send(token: string, message: PushMessage): Promise<PushSendResult>;
}

export interface FcmSettings {
  projectId: string | null;
  accessToken: string | null;
  serviceAccountFile: string | null;
  endpoint: string;
}

/** Without FCM credentials: notes that a push would have gone out (without the token itself), and says it was skipped. */
export function createLoggingPushSender(log: Logger): PushSender {
  return {
    kind: 'log',
    async send(token, message) {
      log.info({ tokenSuffix: token.slice(-6), title: message.title }, 'push skipped (FCM not configured)');
      return 'skipped';
    },
  };
}

/** The FCM HTTP v1 `messages:send` call for one device token. */
export function fcmRequest(settings: { projectId: string; accessToken: string; endpoint: string }, token: string, message: PushMessage) {
  return {
    url: `${settings.endpoint.replace(/\/$/, '')}/v1/projects/${encodeURIComponent(settings.projectId)}/messages:send`,
    headers: { authorization: `Bearer ${settings.accessToken}`, 'content-type': 'application/json; charset=utf-8' },
    body: JSON.stringify({ message: { token, notification: { title: message.title, body: message.body }, ...(message.data ? { data: message.data } : {}) } }),
  };
}

/**
 * The most bytes of an FCM answer read, and discarded: its success answer is one message name and
 * its errors a short JSON document. Past this the connection is dropped and the send is judged by
 * its status alone, as it always is: failing a send FCM answered 2xx would push it twice on retry.
 */
export const FCM_ANSWER_MAX_BYTES = 64 * 1024;

/**
 * Sends through FCM with the source's current access token. A 401 means the token is no longer
 * good (expired or revoked early): the source drops it and the send is tried once more with a
 * fresh one, so a push is not held back a retry period by a token's end.
 */
export function createFcmPushSender(settings: { projectId: string; tokens: AccessTokenSource; endpoint: string }, timeoutMs: number): PushSender {
  async function post(token: string, message: PushMessage): Promise<{ status: number; accessToken: string }> {
    const accessToken = await settings.tokens.token();
    const req = fcmRequest({ projectId: settings.projectId, accessToken, endpoint: settings.endpoint }, token, message);
    const res = await request(req.url, { method: 'POST', headers: req.headers, body: req.body, signal: AbortSignal.timeout(timeoutMs) });
    await discardBounded(res, FCM_ANSWER_MAX_BYTES).catch((cause: unknown) => {
      if (!(cause instanceof ResponseTooLargeError)) throw cause;
    });
    return { status: res.statusCode, accessToken };
  }
  return {
    kind: 'fcm',
    async send(token, message) {
      let res = await post(token, message);
      if (res.status === 401) {
        settings.tokens.refused(res.accessToken);
        res = await post(token, message);
      }
      if (res.status < 200 || res.status >= 300) throw new Error(`FCM answered HTTP ${res.status}`);
      return 'sent';
    },
  };
}

/**
 * FCM when a project and a credential are configured: a service account key (its tokens minted and
 * renewed here), or else a static access token. Otherwise nothing leaves the process.
 */
export async function createPushSender(settings: FcmSettings, deps: { log: Logger; timeoutMs: number; now: Clock }): Promise<PushSender> {
  const account = settings.serviceAccountFile ? await loadServiceAccount(settings.serviceAccountFile) : null;
  const projectId = settings.projectId ?? account?.projectId ?? null;
  const tokens = account ? serviceAccountAccessTokens(account, { timeoutMs: deps.timeoutMs, now: deps.now }) : settings.accessToken ? staticAccessToken(settings.accessToken) : null;
  if (projectId && tokens) return createFcmPushSender({ projectId, tokens, endpoint: settings.endpoint }, deps.timeoutMs);
  return createLoggingPushSender(deps.log);
}
