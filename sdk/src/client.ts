import { randomUUID } from 'node:crypto';
import { NetworkError, errorFromResponse, type ApiError } from './errors.js';
import type {
  CreatePaymentInput,
  CreatePaymentOptions,
  CreateWebhookInput,
  Device,
  EventList,
  EventQuery,
  HealthLive,
  HealthReady,
  Invoice,
  InvoiceList,
  InvoiceSearch,
  Payment,
  PaymentCanceled,
  PaymentCreated,
  PaymentEvent,
  PaymentList,
  PaymentListQuery,
  RegisterDeviceInput,
  SettlementReport,
  Summary,
  UpdateWebhookInput,
  Webhook,
  WebhookCreated,
  WebhookDeleted,
  WebhookDeliveryList,
  WebhookDeliveryQuery,
  WebhookRecoverQueued,
  WebhookRedeliveryQueued,
  WebhookSecretRotated,
  WebhookTestQueued,
} from './types.js';

export const SDK_VERSION = '0.1.0';

export type FetchLike = (input: string, init: RequestInit) => Promise<Response>;

export interface ClientOptions {
  /** Base address including `/api/v1`, for example `https://sandbox.example.mn/api/v1`. */
  baseUrl: string;
  /** The partner API key (`gpk_sandbox_…` or `gpk_live_…`), sent as `X-API-Key`. */
  apiKey: string;
  /** A fetch implementation; defaults to Node's global fetch. */
  fetch?: FetchLike;
  /** Extra attempts after the first on retryable failures. Default 3. */
  retries?: number;
  /** Base of the exponential backoff (doubled per attempt, with jitter). Default 250 ms. */
  retryBaseMs?: number;
  /**
   * Longest single wait between attempts. Computed backoff is capped at it; a `Retry-After`
   * longer than it is not waited for (the RateLimitError/ServerError is thrown instead).
   * Default 30 000 ms.
   */
  maxRetryDelayMs?: number;
  /** Per-attempt timeout, covering the answer and its body. Default 30 000 ms. */
  timeoutMs?: number;
  /** Sent as `User-Agent`. */
  userAgent?: string;
}

export interface PaymentChannelClient {
  invoices: {
    /** GET /invoices with exactly one filter. `total` is the sum of amounts, not a count. */
    search(filter: InvoiceSearch): Promise<InvoiceList>;
    /** GET /invoices/ref/{refNum}: live lookup at the ministry by its reference number. */
    byRef(refNum: string): Promise<Invoice>;
    /** GET /invoices/{id}: the stored copy; the ministry is not called. */
    get(id: string): Promise<Invoice>;
    /** GET /invoices/{id}/refresh: fresh lookup of the stored invoice at the ministry. */
    refresh(id: string): Promise<Invoice>;
  };
  payments: {
    /**
     * POST /payments. An idempotency key is always sent (generated once per call unless given)
     * and reused on every retry, so a retried call never pays twice.
     */
    create(input: CreatePaymentInput, options?: CreatePaymentOptions): Promise<PaymentCreated>;
    /** GET /payments/{id} (payment id, not refNum); the service confirms live first. */
    get(id: string): Promise<Payment>;
    /** DELETE /payments/{id}: cancel a submitted or confirmed payment. */
    cancel(id: string): Promise<PaymentCanceled>;
    /** POST /payments/report: the daily settlement report for `financeDay` (YYYY-MM-DD). */
    settlement(financeDay: string): Promise<SettlementReport>;
  };
  reports: {
    summary(): Promise<Summary>;
    /** Newest first; `limit` at most 100. */
    payments(query?: PaymentListQuery): Promise<PaymentList>;
  };
  webhooks: {
    /** The answer is the only one that carries the secret. Not retried on network errors. */
    create(input: CreateWebhookInput): Promise<WebhookCreated>;
    list(): Promise<Webhook[]>;
    /** GET /webhooks/{id}: one webhook, without its secret. */
    get(id: string): Promise<Webhook>;
    /** PATCH /webhooks/{id}: change the url or events, or disable (`enabled: false`) and enable it. */
    update(id: string, input: UpdateWebhookInput): Promise<Webhook>;
    /**
     * POST /webhooks/{id}/rotate-secret: a new secret (yours, or a generated one when omitted);
     * the previous one keeps signing beside it until `previousSecretExpiresAt`. Not retried on
     * network errors (a repeat would rotate again).
     */
    rotateSecret(id: string, secret?: string): Promise<WebhookSecretRotated>;
    /**
     * POST /webhooks/{id}/recover: sends again every event since `since` (ISO 8601) that this
     * webhook has neither received nor is about to; each once, however often it is called.
     */
    recover(id: string, since: string): Promise<WebhookRecoverQueued>;
    /** Deliveries not yet sent are dropped with it. */
    delete(id: string): Promise<WebhookDeleted>;
    /** Delivery attempts and pending deliveries, newest first; filter by status and payment, page with `cursor`. */
    deliveries(id: string, query?: WebhookDeliveryQuery): Promise<WebhookDeliveryList>;
    /**
     * POST /webhooks/{id}/test: sends a signed `webhook.test` delivery to this webhook only.
     * Not retried on network errors (a repeat would send a second test).
     */
    test(id: string): Promise<WebhookTestQueued>;
    /**
     * POST /webhooks/{id}/deliveries/{deliveryId}/redeliver: one more attempt of a delivery
     * (delivered, failed or pending), due now; the attempt number continues.
     */
    redeliver(id: string, deliveryId: string): Promise<WebhookRedeliveryQueued>;
  };
  events: {
    /** GET /events: one page of your payment events, newest first. */
    list(query?: EventQuery): Promise<EventList>;
    /** Every event matching the query, newest first, page after page (follows `nextCursor`). */
    iterate(query?: Omit<EventQuery, 'cursor'>): AsyncIterableIterator<PaymentEvent>;
    /** GET /events/{id}. */
    get(id: string): Promise<PaymentEvent>;
  };
  devices: {
    /** Create or update (upsert) a push device of one of your users. */
    register(input: RegisterDeviceInput): Promise<Device>;
  };
  health: {
    live(): Promise<HealthLive>;
    /** Resolves for 200 and for 503 (then `db` says what is down); never retried. */
    ready(): Promise<HealthReady>;
  };
}

interface RequestSpec {
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

const RETRY_STATUSES = new Set([429, 502, 503, 504]);

export function createClient(options: ClientOptions): PaymentChannelClient {
  if (!options.baseUrl) throw new TypeError('baseUrl is required');
  if (!options.apiKey) throw new TypeError('apiKey is required');
  const baseUrl = options.baseUrl.replace(/\/+$/, '');
  const doFetch: FetchLike = options.fetch ?? ((input, init) => globalThis.fetch(input, init));
  const retries = Math.max(0, Math.floor(options.retries ?? 3));
  const retryBaseMs = Math.max(0, options.retryBaseMs ?? 250);
  const maxRetryDelayMs = Math.max(0, options.maxRetryDelayMs ?? 30_000);
  const timeoutMs = Math.max(1, options.timeoutMs ?? 30_000);
  const userAgent = options.userAgent ?? `gov-payment-channel-sdk/${SDK_VERSION} node/${process.versions.node}`;

  const backoff = (attempt: number): number => {
    const ceiling = Math.min(maxRetryDelayMs, retryBaseMs * 2 ** attempt);
    // "Equal jitter": at least half the exponential delay, so retries never bunch at zero.
    return ceiling / 2 + Math.random() * (ceiling / 2);
  };

  async function request<T>(spec: RequestSpec): Promise<T> {
    const url = buildUrl(baseUrl, spec.path, spec.query);
    const headers: Record<string, string> = { accept: 'application/json', 'user-agent': userAgent, ...spec.headers };
    if (spec.auth !== false) headers['x-api-key'] = options.apiKey;
    let payload: string | undefined;
    if (spec.body !== undefined) {
      payload = JSON.stringify(spec.body);
      headers['content-type'] = 'application/json';
    }
    const maxAttempts = spec.retry === false ? 1 : retries + 1;

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
        await sleep(backoff(attempt), spec.signal);
        continue;
      }

      if ((status >= 200 && status < 300) || spec.acceptStatuses?.includes(status)) return body as T;

      const retryAfter = parseRetryAfter(responseHeaders.get('retry-after'));
      const error: ApiError = errorFromResponse(status, body, responseHeaders.get('x-request-id') ?? undefined, retryAfter);
      const retryable = status === 429 || (spec.idempotent && RETRY_STATUSES.has(status));
      if (last || !retryable) throw error;
      let delay = backoff(attempt);
      if (retryAfter !== undefined) {
        if (retryAfter * 1000 > maxRetryDelayMs) throw error;
        delay = retryAfter * 1000;
      }
      await sleep(delay, spec.signal);
    }
  }

  const id = (value: string) => encodeURIComponent(value);

  const listEvents = (query: EventQuery = {}) =>
    request<EventList>({
      method: 'GET',
      path: '/events',
      query: { type: query.type, paymentId: query.paymentId, from: query.from, to: query.to, cursor: query.cursor, limit: query.limit },
      idempotent: true,
    });

  async function* iterateEvents(query: Omit<EventQuery, 'cursor'> = {}): AsyncIterableIterator<PaymentEvent> {
    let cursor: string | undefined;
    do {
      const page = await listEvents({ ...query, cursor });
      yield* page.items;
      cursor = page.nextCursor ?? undefined;
    } while (cursor !== undefined);
  }

  return {
    invoices: {
      search: (filter) =>
        request<InvoiceList>({ method: 'GET', path: '/invoices', query: { ttd: filter.ttd, vehicle: filter.vehicle, taxRef: filter.taxRef }, idempotent: true }),
      byRef: (refNum) => request<Invoice>({ method: 'GET', path: `/invoices/ref/${id(refNum)}`, idempotent: true }),
      get: (invoiceId) => request<Invoice>({ method: 'GET', path: `/invoices/${id(invoiceId)}`, idempotent: true }),
      refresh: (invoiceId) => request<Invoice>({ method: 'GET', path: `/invoices/${id(invoiceId)}/refresh`, idempotent: true }),
    },
    payments: {
      create: (input, opts = {}) => {
        // One key per logical call, generated before the first attempt and reused by every retry.
        const idempotencyKey = opts.idempotencyKey ?? randomUUID();
        const body: CreatePaymentInput = { invoiceId: input.invoiceId };
        if (input.amount !== undefined) body.amount = input.amount;
        return request<PaymentCreated>({
          method: 'POST',
          path: '/payments',
          body,
          headers: { 'x-idempotency-key': idempotencyKey, ...(opts.userId === undefined ? {} : { 'x-user-id': opts.userId }) },
          idempotent: true,
          signal: opts.signal,
        });
      },
      get: (paymentId) => request<Payment>({ method: 'GET', path: `/payments/${id(paymentId)}`, idempotent: true }),
      cancel: (paymentId) => request<PaymentCanceled>({ method: 'DELETE', path: `/payments/${id(paymentId)}`, idempotent: true }),
      settlement: (financeDay) => request<SettlementReport>({ method: 'POST', path: '/payments/report', body: { financeDay }, idempotent: true }),
    },
    reports: {
      summary: () => request<Summary>({ method: 'GET', path: '/reports/summary', idempotent: true }),
      payments: (query = {}) =>
        request<PaymentList>({ method: 'GET', path: '/reports/payments', query: { page: query.page, limit: query.limit }, idempotent: true }),
    },
    webhooks: {
      create: (input) =>
        request<WebhookCreated>({ method: 'POST', path: '/webhooks', body: { url: input.url, secret: input.secret, events: input.events }, idempotent: false }),
      list: () => request<Webhook[]>({ method: 'GET', path: '/webhooks', idempotent: true }),
      get: (webhookId) => request<Webhook>({ method: 'GET', path: `/webhooks/${id(webhookId)}`, idempotent: true }),
      update: (webhookId, input) => {
        const body: UpdateWebhookInput = {};
        if (input.url !== undefined) body.url = input.url;
        if (input.events !== undefined) body.events = input.events;
        if (input.enabled !== undefined) body.enabled = input.enabled;
        // Setting the same values again changes nothing more.
        return request<Webhook>({ method: 'PATCH', path: `/webhooks/${id(webhookId)}`, body, idempotent: true });
      },
      rotateSecret: (webhookId, secret) =>
        request<WebhookSecretRotated>({
          method: 'POST',
          path: `/webhooks/${id(webhookId)}/rotate-secret`,
          body: secret === undefined ? {} : { secret },
          idempotent: false,
        }),
      // A repeat queues nothing more: what the first call queued is pending.
      recover: (webhookId, since) =>
        request<WebhookRecoverQueued>({ method: 'POST', path: `/webhooks/${id(webhookId)}/recover`, body: { since }, idempotent: true }),
      delete: (webhookId) => request<WebhookDeleted>({ method: 'DELETE', path: `/webhooks/${id(webhookId)}`, idempotent: true }),
      deliveries: (webhookId, query = {}) =>
        request<WebhookDeliveryList>({
          method: 'GET',
          path: `/webhooks/${id(webhookId)}/deliveries`,
          query: { status: query.status, paymentId: query.paymentId, cursor: query.cursor, limit: query.limit },
          idempotent: true,
        }),
      test: (webhookId) => request<WebhookTestQueued>({ method: 'POST', path: `/webhooks/${id(webhookId)}/test`, idempotent: false }),
      // A repeat only re-queues the same delivery (at most one extra attempt, which receivers deduplicate).
      redeliver: (webhookId, deliveryId) =>
        request<WebhookRedeliveryQueued>({ method: 'POST', path: `/webhooks/${id(webhookId)}/deliveries/${id(deliveryId)}/redeliver`, idempotent: true }),
    },
    events: {
      list: listEvents,
      iterate: iterateEvents,
      get: (eventId) => request<PaymentEvent>({ method: 'GET', path: `/events/${id(eventId)}`, idempotent: true }),
    },
    devices: {
      register: (input) =>
        request<Device>({
          method: 'POST',
          path: '/devices',
          body: { userId: input.userId, fcmToken: input.fcmToken, platform: input.platform },
          idempotent: true,
        }),
    },
    health: {
      live: () => request<HealthLive>({ method: 'GET', path: '/health/live', auth: false, idempotent: true }),
      ready: () => request<HealthReady>({ method: 'GET', path: '/health/ready', auth: false, idempotent: true, retry: false, acceptStatuses: [503] }),
    },
  };
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
