import { NetworkError, RedirectError, ResponseTooLargeError, errorFromResponse, type ApiError } from './errors.js';
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
  maxResponseBytes: number;
  userAgent: string;
}

/**
 * 4 MiB: every answer of the API but a settlement is a few dozen KiB at most (a page of 100 events,
 * a QR image); a settlement lists the day's payments, some thousands in 4 MiB, and a partner with
 * more a day raises the option (sdk/README.md).
 */
const DEFAULT_MAX_RESPONSE_BYTES = 4 * 1024 * 1024;

const RETRY_STATUSES = new Set([429, 502, 503, 504]);

export function createTransport(options: ClientOptions): SendRequest {
  const maxResponseBytes = options.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES;
  // Checked rather than clamped like the other numbers: NaN would silently lift the cap.
  if (typeof maxResponseBytes !== 'number' || !(maxResponseBytes >= 1)) throw new TypeError('maxResponseBytes must be a number of bytes, at least 1');
  const settings: Settings = {
    baseUrl: options.baseUrl.replace(/\/+$/, ''),
    apiKey: options.apiKey,
    fetch: options.fetch ?? ((input, init) => globalThis.fetch(input, init)),
    retries: Math.max(0, Math.floor(options.retries ?? 3)),
    retryBaseMs: Math.max(0, options.retryBaseMs ?? 250),
    maxRetryDelayMs: Math.max(0, options.maxRetryDelayMs ?? 30_000),
    timeoutMs: Math.max(1, options.timeoutMs ?? 30_000),
    maxResponseBytes: Math.floor(maxResponseBytes),
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
      // Never 'follow': fetch would resend the key (and on 307/308 the body) to any Location.
      const res = await doFetch(url, { method: spec.method, headers, body: payload, signal, redirect: 'manual' });
      status = res.status;
      responseHeaders = res.headers;
      if (isRedirect(res)) {
        discard(res);
        throw redirectError(settings, spec, res);
      }
      body = await readBody(res, settings.maxResponseBytes, `${spec.method} ${spec.path}`);
    } catch (cause) {
      // An answer came and is refused; the same request would be answered the same way.
      if (cause instanceof RedirectError || cause instanceof ResponseTooLargeError) throw cause;
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

/**
 * Node's fetch hands 'manual' redirects back as they came; a browser's as an opaque answer with
 * status 0 and nothing readable.
 */
function isRedirect(res: Response): boolean {
  return res.type === 'opaqueredirect' || res.status === 0 || (res.status >= 300 && res.status < 400);
}

function redirectError(settings: Settings, spec: RequestSpec, res: Response): RedirectError {
  const raw = res.headers.get('location');
  // The location is the server's text: a hostile one could echo the key back into it.
  const location = raw === null ? undefined : redact(raw, settings.apiKey);
  const where = location === undefined ? 'without a readable Location' : `to ${location}`;
  const status = res.status === 0 ? 'a redirect' : `HTTP ${res.status}`;
  return new RedirectError(
    res.status,
    location,
    res.headers.get('x-request-id') ?? undefined,
    `${spec.method} ${spec.path} answered ${status} ${where}; the SDK does not follow redirects (check baseUrl)`,
  );
}

function redact(text: string, secret: string): string {
  if (secret === '') return text;
  return text.split(secret).join('[redacted]').split(encodeURIComponent(secret)).join('[redacted]');
}

/** Drops an answer's body unread, so its connection is closed rather than drained. */
function discard(res: Response): void {
  res.body?.cancel().catch(() => undefined);
}

async function readBody(res: Response, maxBytes: number, request: string): Promise<unknown> {
  const text = await readText(res, maxBytes, request);
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

/** The body as text, read no further than `maxBytes`. */
async function readText(res: Response, maxBytes: number, request: string): Promise<string> {
  const tooLarge = () =>
    new ResponseTooLargeError(
      `${request} answered HTTP ${res.status} with a body over maxResponseBytes (${maxBytes} bytes); reading stopped`,
      res.status,
      maxBytes,
      res.headers.get('x-request-id') ?? undefined,
    );
  if (Number(res.headers.get('content-length')) > maxBytes) {
    discard(res);
    throw tooLarge();
  }
  const stream = res.body;
  if (!stream) {
    // A Response built without a stream (a custom fetch's own): its text is already in memory.
    const text = await res.text();
    if (new TextEncoder().encode(text).byteLength > maxBytes) throw tooLarge();
    return text;
  }
  const reader = stream.getReader();
  const decoder = new TextDecoder();
  let received = 0;
  let text = '';
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    received += value.byteLength;
    if (received > maxBytes) {
      // Canceling the stream aborts the download, and the connection with it.
      reader.cancel().catch(() => undefined);
      throw tooLarge();
    }
    text += decoder.decode(value, { stream: true });
  }
  return text + decoder.decode();
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
