import { NetworkError, errorFromResponse, type ApiError } from './errors.js';
import type { ClientOptions, FetchLike } from './client.js';
import { SDK_VERSION } from './version.js';

export interface RequestSpec {
  method: 'GET' | 'POST' | 'PATCH' | 'DELETE';
  path: string;
  query?: Record<string, string | number | undefined>;
  body?: unknown;
  headers?: Record<string, string>;
  /**
   * Safe to repeat when it is unknown whether the first attempt reached the service (network
   * error, timeout, 502/503/504). Non-idempotent requests are retried only on 429, which by
   * contract never reaches the business logic.
   */
  idempotent: boolean;
  auth?: boolean;
  retry?: boolean;
  /** Non-2xx statuses answered as a normal result instead of an error. */
  acceptStatuses?: number[];
  signal?: AbortSignal;
}

/** Sends one API request, retrying as its spec allows; resolves with the parsed body. */
export type SendRequest = <T>(spec: RequestSpec) => Promise<T>;

/** ClientOptions with every default applied. */
interface Settings {
  baseUrl: string;
  apiKey: string;
  fetch: FetchLike;
  retries: number;
  retryBaseMs: number;
  maxRetryDelayMs: number;
  timeoutMs: number;
  userAgent: string;
}

const RETRY_STATUSES = new Set([429, 502, 503, 504]);

export function createTransport(options: ClientOptions): SendRequest {
  const settings: Settings = {
    baseUrl: options.baseUrl.replace(/\/+$/, ''),
    apiKey: options.apiKey,
    fetch: options.fetch ?? ((input, init) => globalThis.fetch(input, init)),
    retries: Math.max(0, Math.floor(options.retries ?? 3)),
    retryBaseMs: Math.max(0, options.retryBaseMs ?? 250),
    maxRetryDelayMs: Math.max(0, options.maxRetryDelayMs ?? 30_000),
    timeoutMs: Math.max(1, options.timeoutMs ?? 30_000),
    userAgent: options.userAgent ?? `gov-payment-channel-sdk/${SDK_VERSION} node/${process.versions.node}`,
  };
  return <T>(spec: RequestSpec) => send<T>(settings, spec);
}

function backoff(settings: Settings, attempt: number): number {
  const ceiling = Math.min(settings.maxRetryDelayMs, settings.retryBaseMs * 2 ** attempt);
  // "Equal jitter": at least half the exponential delay, so retries never bunch at zero.
  return ceiling / 2 + Math.random() * (ceiling / 2);
}

async function send<T>(settings: Settings, spec: RequestSpec): Promise<T> {
  // Called unbound, as a plain function: a fetch given in the options gets no `this`.
  const { fetch: doFetch, timeoutMs, maxRetryDelayMs } = settings;
  const url = buildUrl(settings.baseUrl, spec.path, spec.query);
  const headers: Record<string, string> = { accept: 'application/json', 'user-agent': settings.userAgent, ...spec.headers };
  if (spec.auth !== false) headers['x-api-key'] = settings.apiKey;
  let payload: string | undefined;
  if (spec.body !== undefined) {
    payload = JSON.stringify(spec.body);
    headers['content-type'] = 'application/json';
  }
  const maxAttempts = spec.retry === false ? 1 : settings.retries + 1;

  for (let attempt = 0; ; attempt++) {
    const last = attempt + 1 >= maxAttempts;
    const timeout = AbortSignal.timeout(timeoutMs);
    const signal = spec.signal ? AbortSignal.any([spec.signal, timeout]) : timeout;
    let status: number;
    let responseHeaders: Headers;
    let body: unknown;
    try {
      const res = await doFetch(url, { method: spec.method, headers, body: payload, signal });
      status = res.status;
      responseHeaders = res.headers;
      body = await readBody(res);
    } catch (cause) {
      if (spec.signal?.aborted) throw spec.signal.reason ?? cause;
      const timedOut = timeout.aborted;
      const error = new NetworkError(
        timedOut ? `${spec.method} ${spec.path} timed out after ${timeoutMs} ms` : `${spec.method} ${spec.path} failed: ${describeCause(cause)}`,
        { cause, timedOut },
      );
      if (last || !spec.idempotent) throw error;
      await sleep(backoff(settings, attempt), spec.signal);
      continue;
    }

    if ((status >= 200 && status < 300) || spec.acceptStatuses?.includes(status)) return body as T;

    const retryAfter = parseRetryAfter(responseHeaders.get('retry-after'));
    const error: ApiError = errorFromResponse(status, body, responseHeaders.get('x-request-id') ?? undefined, retryAfter);
    const retryable = status === 429 || (spec.idempotent && RETRY_STATUSES.has(status));
    if (last || !retryable) throw error;
    let delay = backoff(settings, attempt);
    if (retryAfter !== undefined) {
      if (retryAfter * 1000 > maxRetryDelayMs) throw error;
      delay = retryAfter * 1000;
    }
    await sleep(delay, spec.signal);
  }
}

function buildUrl(baseUrl: string, path: string, query: RequestSpec['query']): string {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(query ?? {})) {
    if (value !== undefined) params.append(key, String(value));
  }
  const qs = params.toString();
  return `${baseUrl}${path}${qs ? `?${qs}` : ''}`;
}

async function readBody(res: Response): Promise<unknown> {
  const text = await res.text();
  if (text === '') return undefined;
  const type = res.headers.get('content-type') ?? '';
  if (/[/+]json\b/i.test(type)) {
    try {
      return JSON.parse(text) as unknown;
    } catch {
      return text;
    }
  }
  return text;
}

/** `Retry-After` as seconds (delta-seconds or an HTTP date); undefined when absent or unreadable. */
export function parseRetryAfter(value: string | null): number | undefined {
  if (value === null || value.trim() === '') return undefined;
  const trimmed = value.trim();
  if (/^\d+(\.\d+)?$/.test(trimmed)) return Number(trimmed);
  const date = Date.parse(trimmed);
  if (Number.isNaN(date)) return undefined;
  return Math.max(0, (date - Date.now()) / 1000);
}

function describeCause(cause: unknown): string {
  if (cause instanceof Error) {
    const inner = cause.cause instanceof Error ? `: ${cause.cause.message}` : '';
    return `${cause.message}${inner}`;
  }
  return String(cause);
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  if (ms <= 0) return signal?.aborted ? Promise.reject(signal.reason) : Promise.resolve();
  return new Promise((resolve, reject) => {
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    if (signal?.aborted) onAbort();
    else signal?.addEventListener('abort', onAbort, { once: true });
  });
}
