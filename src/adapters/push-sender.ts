import { request } from 'undici';
import type { Logger } from '../domain/logger.port.js';

export interface PushMessage {
  title: string;
  body: string;
  /** FCM data payloads are string maps. */
  data?: Record<string, string>;
}

export interface PushSender {
  readonly kind: 'log' | 'fcm';
  send(token: string, message: PushMessage): Promise<void>;
}

export interface FcmSettings {
  projectId: string | null;
  accessToken: string | null;
  endpoint: string;
}

/** Development stand-in: records that a push would have gone out, without the token itself. */
export function createLoggingPushSender(log: Logger): PushSender {
  return {
    kind: 'log',
    async send(token, message) {
      log.info({ tokenSuffix: token.slice(-6), title: message.title }, 'push not sent (FCM not configured)');
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

export function createFcmPushSender(settings: { projectId: string; accessToken: string; endpoint: string }, timeoutMs: number): PushSender {
  return {
    kind: 'fcm',
    async send(token, message) {
      const req = fcmRequest(settings, token, message);
      const res = await request(req.url, { method: 'POST', headers: req.headers, body: req.body, signal: AbortSignal.timeout(timeoutMs) });
      await res.body.dump();
      if (res.statusCode < 200 || res.statusCode >= 300) throw new Error(`FCM answered HTTP ${res.statusCode}`);
    },
  };
}

/** FCM only when both the project and a credential are configured; otherwise nothing leaves the process. */
export function createPushSender(settings: FcmSettings, log: Logger, timeoutMs: number): PushSender {
  if (settings.projectId && settings.accessToken) {
    return createFcmPushSender({ projectId: settings.projectId, accessToken: settings.accessToken, endpoint: settings.endpoint }, timeoutMs);
  }
  return createLoggingPushSender(log);
}
