import { Pool } from 'undici';
import { readBoundedText, ResponseTooLargeError } from '../bounded-body.helper.js';
import { UpstreamError } from '../../domain/ministry.port.js';
import type { Source } from '../../domain/vocabulary.js';
import type { TraceHeaders } from '../../domain/trace-context.js';

export interface HttpClientOptions {
  source: Source;
  baseUrl: string;
  timeoutMs: number;
  /** Keep-alive connections per upstream. */
  connections?: number;
  /** The trace context each call carries (`traceparent`, `tracestate`); none when left out. */
  traceHeaders?: () => TraceHeaders;
  /** The most bytes of one answer read (MINISTRY_MAX_RESPONSE_BYTES); past it the answer is malformed. */
  maxResponseBytes?: number;
}

export interface JsonResponse {
  status: number;
  /** Parsed JSON; undefined for a non-JSON body on a status the caller accepted. */
  body: unknown;
}

export interface RequestOptions {
  /** Non-2xx statuses the adapter interprets itself (e.g. 404 = unknown reference). */
  acceptStatuses?: readonly number[];
  /**
   * A larger bound for this call's answer, for a report whose size grows with the day's business
   * (a settlement); never below the client's own.
   */
  maxResponseBytes?: number;
}

/** MINISTRY_MAX_RESPONSE_BYTES's default: an invoice, a search or a payment answer is a few KiB. */
export const DEFAULT_MAX_RESPONSE_BYTES = 1024 * 1024;

/**
 * The bound of a settlement report. A busy finance day is about 100,000 settled payments over the
 * three systems (bench/reconciliation.bench.ts) and one entry is about 300 bytes on the wire
 * (a UUID, a reference, an amount, a Cyrillic name and title, a time): 32 MiB holds such a day
 * even if one system settled all of it. Reading, parsing and mapping those 100,000 entries (30 MB)
 * took about 65 MB of heap at its peak, room the production heap (192 MB) has beside the rest.
 */
export const SETTLEMENT_MAX_RESPONSE_BYTES = 32 * 1024 * 1024;

export interface HttpClient {
  getJson(path: string, options?: RequestOptions): Promise<JsonResponse>;
  postJson(path: string, body: unknown, options?: RequestOptions): Promise<JsonResponse>;
  close(): Promise<void>;
}

const JSON_ACCEPT = { accept: 'application/json' };
const JSON_BODY = { accept: 'application/json', 'content-type': 'application/json' };
const TIMEOUT_CODES = new Set(['UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT', 'UND_ERR_CONNECT_TIMEOUT']);

function isTimeout(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const code = (error as { code?: unknown }).code;
  return error.name === 'TimeoutError' || (typeof code === 'string' && TIMEOUT_CODES.has(code));
}

function toUpstreamError(source: Source, error: unknown, what: string): UpstreamError {
  if (error instanceof UpstreamError) return error;
  // An answer past the bound is the system answering what this service cannot read, as any malformed body.
  if (error instanceof ResponseTooLargeError) return new UpstreamError(source, 'malformed', `${what}: ${error.message}`, { cause: error });
  const detail = error instanceof Error ? error.message : String(error);
  const kind = isTimeout(error) ? 'timeout' : 'network';
  return new UpstreamError(source, kind, `${what}: ${detail}`, { cause: error });
}

function parseBody(source: Source, text: string, isSuccess: boolean, what: string): unknown {
  try {
    return JSON.parse(text);
  } catch (error) {
    if (!isSuccess) return undefined;
    throw new UpstreamError(source, 'malformed', `${what}: body is not JSON`, { cause: error });
  }
}

export function createHttpClient(options: HttpClientOptions): HttpClient {
  const { source, timeoutMs } = options;
  const maxResponseBytes = options.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES;
  const base = new URL(options.baseUrl);
  const basePath = base.pathname.replace(/\/+$/, '');
  const pool = new Pool(base.origin, {
    connections: options.connections ?? 16,
    connectTimeout: timeoutMs,
    headersTimeout: timeoutMs,
    bodyTimeout: timeoutMs,
  });

  async function send(method: 'GET' | 'POST', path: string, payload: unknown, requestOptions: RequestOptions) {
    const what = `${method} ${path}`;
    try {
      // One signal bounds the whole call, including reading the body.
      const response = await pool.request({
        method,
        path: `${basePath}${path}`,
        headers: { ...(payload === undefined ? JSON_ACCEPT : JSON_BODY), ...options.traceHeaders?.() },
        body: payload === undefined ? undefined : JSON.stringify(payload),
        signal: AbortSignal.timeout(timeoutMs),
      });
      const status = response.statusCode;
      const isSuccess = status >= 200 && status < 300;
      if (!isSuccess && !requestOptions.acceptStatuses?.includes(status)) {
        // dump() discards what it reads and closes the connection past 128 KiB: an error page holds nothing.
        await response.body.dump();
        throw new UpstreamError(source, 'http', `${what} answered HTTP ${status}`);
      }
      const bound = Math.max(maxResponseBytes, requestOptions.maxResponseBytes ?? 0);
      return { status, body: parseBody(source, await readBoundedText(response, bound), isSuccess, what) };
    } catch (error) {
      throw toUpstreamError(source, error, what);
    }
  }

  return {
    getJson: (path, requestOptions = {}) => send('GET', path, undefined, requestOptions),
    postJson: (path, payload, requestOptions = {}) => send('POST', path, payload, requestOptions),
    close: () => pool.close(),
  };
}
