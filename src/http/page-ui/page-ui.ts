/*
 * What the operator console and the sandbox page share, in the browser: building elements (text
 * always goes in as text, never as markup), the error box both pages carry, and the JSON client
 * that turns the service's error answers into ApiError. Bundled into each page's script by
 * http/page-script.bundler.ts; the DOM is touched only when a function is called, so the pure
 * parts run under the unit tests too.
 */
import type { Static } from 'typebox';
import type { BadRequestBody, ErrorBody } from '../../schemas/common.schema.js';
import type { PaymentFailedBody } from '../../schemas/payment.schema.js';

/** Every error answer of the service: one message, one per violation (400), or a refused payment (422). */
export type ServiceErrorBody = Static<typeof ErrorBody> | Static<typeof BadRequestBody> | Static<typeof PaymentFailedBody>;

type AttrValue = string | number | boolean | null | undefined;
type Listener = (event: Event) => void;
/** Attributes by name; `class` and `text` set className and textContent, `dataset` data-*, `on…` a listener. */
export type Props = Record<string, AttrValue | Listener | Record<string, AttrValue>>;
export type Child = Node | string | null | undefined | false;

export function byId<T extends HTMLElement = HTMLElement>(id: string): T {
  const node = document.getElementById(id);
  if (!node) throw new Error(`the page has no #${id}`);
  return node as T;
}

function setProp(node: HTMLElement, name: string, value: Props[string]): void {
  if (value === null || value === undefined || value === false) return;
  if (typeof value === 'function') node.addEventListener(name.replace(/^on/, ''), value);
  else if (typeof value === 'object') {
    for (const [key, item] of Object.entries(value)) if (item !== null && item !== undefined) node.dataset[key] = String(item);
  } else if (name === 'class') node.className = String(value);
  else if (name === 'text') node.textContent = String(value);
  else node.setAttribute(name, value === true ? '' : String(value));
}

export function el<K extends keyof HTMLElementTagNameMap>(tag: K, props: Props = {}, ...children: (Child | Child[])[]): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(props)) setProp(node, name, value);
  for (const child of children.flat()) if (child !== null && child !== undefined && child !== false) node.append(child);
  return node;
}

// ---- errors --------------------------------------------------------------------------------------

export class ApiError extends Error {
  constructor(
    /** 0 when the service never answered. */
    readonly status: number,
    readonly reason: string,
    /** The service's messages: one, or one per violation. */
    readonly messages: readonly string[],
    readonly body: ServiceErrorBody | null,
    readonly retryAfterSeconds: number | null,
    fallback: string,
  ) {
    super(messages.length > 0 ? messages.join('; ') : fallback || reason || 'Request failed');
    this.name = 'ApiError';
  }

  /** Worth trying again as it was: no answer, a rate limit, or the service's own trouble. */
  get retryable(): boolean {
    return this.status === 0 || this.status === 429 || this.status >= 500;
  }

  get statusLine(): string {
    return this.status ? `HTTP ${this.status} ${this.reason}`.trim() : 'Network error';
  }
}

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/** The body when it has the service's error shape; a proxy's HTML page or the like is not one. */
export function serviceErrorBody(body: unknown): ServiceErrorBody | null {
  if (!isRecord(body)) return null;
  const { message } = body;
  const ok = typeof message === 'string' || (Array.isArray(message) && message.every((m) => typeof m === 'string'));
  return ok ? (body as ServiceErrorBody) : null;
}

/** An ApiError from a non-2xx answer (status, status text, the parsed body or null, Retry-After). */
export function apiErrorOf(status: number, statusText: string, body: unknown, retryAfter: string | null, rawText = ''): ApiError {
  const parsed = serviceErrorBody(body);
  const messages = parsed ? (Array.isArray(parsed.message) ? parsed.message : [parsed.message]).filter((m) => m !== '') : [];
  const reason = parsed && 'error' in parsed ? parsed.error : statusText;
  const seconds = retryAfter !== null && /^\d+$/.test(retryAfter.trim()) ? Number(retryAfter) : null;
  return new ApiError(status, reason || statusText, messages, parsed, seconds, rawText.slice(0, 200));
}

export function networkError(cause: unknown): ApiError {
  const detail = cause instanceof Error ? cause.message : String(cause);
  return new ApiError(0, '', [], null, null, `could not reach the service (${detail})`);
}

/** One line for a table's error row or a card: the status and the message. */
export function describeError(err: unknown): string {
  if (err instanceof ApiError) return err.status ? `${err.statusLine} — ${err.message}` : `network error — ${err.message}`;
  return err instanceof Error ? err.message : String(err);
}

export interface ErrorLines {
  status: string;
  text: string;
  /** One item per violation when the service listed several. */
  list: string[];
}

/** What the error box says: `hint` adds the page's advice for a status (sign in again, check the key…). */
export function errorLines(err: unknown, context: string, hint: (err: ApiError) => string): ErrorLines {
  const prefix = context ? `${context}: ` : '';
  if (!(err instanceof ApiError)) return { status: 'Error', text: prefix + (err instanceof Error ? err.message : String(err)), list: [] };
  const several = err.messages.length > 1;
  return {
    status: err.statusLine,
    text: prefix + (several ? 'the request was refused' : err.message) + hint(err),
    list: several ? [...err.messages] : [],
  };
}

export interface ErrorBox {
  show(err: unknown, context?: string): void;
  clear(): void;
}

/**
 * The page's error box, built here into its empty `#error` (role="alert") so every page shows
 * the same markup: a status, a message, the violations and a dismiss button.
 */
export function createErrorBox(hint: (err: ApiError) => string = () => ''): ErrorBox {
  const box = byId('error');
  const status = el('span', { class: 'status', id: 'error-status' });
  const text = el('span', { id: 'error-text' });
  const list = el('ul', { id: 'error-list' });
  const clear = () => box.classList.remove('show');
  const close = el('button', { type: 'button', id: 'error-close', 'aria-label': 'Dismiss', onclick: clear }, '×');
  box.replaceChildren(el('div', {}, el('div', {}, status, ' ', text), list), close);
  return {
    clear,
    show(err, context = '') {
      const lines = errorLines(err, context, hint);
      status.textContent = lines.status;
      text.textContent = lines.text;
      list.replaceChildren(...lines.list.map((item) => el('li', { text: item })));
      box.dataset.status = err instanceof ApiError ? String(err.status) : '';
      box.classList.add('show');
    },
  };
}

// ---- HTTP ----------------------------------------------------------------------------------------

export interface ApiAnswer<T> {
  data: T;
  headers: Headers;
  status: number;
}

export interface ApiRequestOptions {
  body?: unknown;
  headers?: Record<string, string>;
}

/** Told of every request: its status (0 when none came) and how long it took. */
export type AnswerListener = (method: string, path: string, status: number, ms: number, headers: Headers | null) => void;

export interface ApiClientOptions {
  /** Prefix of every path (the sandbox's /api/v1; the console's admin API is at the root). */
  base: string;
  /** Headers read at each request: the key or token may change meanwhile. */
  headers: () => Record<string, string>;
  onAnswer?: AnswerListener;
  onUnauthorized?: () => void;
  fetch?: typeof fetch;
  now?: () => number;
}

export interface ApiClient {
  /**
   * The answer as the route's response schema types it: the service serializes by that schema, so
   * the page trusts the shape instead of checking it again.
   */
  request<T>(method: string, path: string, options?: ApiRequestOptions): Promise<ApiAnswer<T>>;
  data<T>(method: string, path: string, body?: unknown): Promise<T>;
}

function parseJson(text: string): unknown {
  if (!text) return null;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return null;
  }
}

export function createApiClient(options: ApiClientOptions): ApiClient {
  const send = options.fetch ?? ((input, init) => fetch(input, init));
  const now = options.now ?? (() => performance.now());
  const report = options.onAnswer ?? (() => undefined);

  async function request<T>(method: string, path: string, { body, headers = {} }: ApiRequestOptions = {}): Promise<ApiAnswer<T>> {
    const all: Record<string, string> = { accept: 'application/json', ...options.headers(), ...headers };
    if (body !== undefined) all['content-type'] = 'application/json';
    const started = now();
    let res: Response;
    try {
      res = await send(options.base + path, { method, headers: all, body: body === undefined ? undefined : JSON.stringify(body), cache: 'no-store', credentials: 'same-origin' });
    } catch (cause) {
      report(method, path, 0, Math.round(now() - started), null);
      throw networkError(cause);
    }
    const text = await res.text();
    report(method, path, res.status, Math.round(now() - started), res.headers);
    const data = parseJson(text);
    if (!res.ok) {
      if (res.status === 401) options.onUnauthorized?.();
      throw apiErrorOf(res.status, res.statusText, data, res.headers.get('retry-after'), text);
    }
    return { data: data as T, headers: res.headers, status: res.status };
  }

  return { request, data: async <T>(method: string, path: string, body?: unknown) => (await request<T>(method, path, { body })).data };
}
