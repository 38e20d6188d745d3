import { devicesResource, eventsResource, healthResource, invoicesResource, paymentsResource, reportsResource, sandboxResource } from './resources.js';
import { createTransport } from './transport.js';
import { casesResource } from './cases-resource.js';
import type {
  Case,
  CaseDetail,
  CaseList,
  CaseListParams,
  CreatePaymentInput,
  CreatePaymentOptions,
  CreateSandboxInvoiceInput,
  CreateWebhookInput,
  Device,
  EventList,
  EventQuery,
  FollowEventsOptions,
  HealthLive,
  HealthReady,
  Invoice,
  InvoiceList,
  InvoiceSearch,
  OpenCaseParams,
  Payment,
  PaymentCanceled,
  PaymentCreated,
  PaymentEvent,
  PaymentList,
  PaymentListQuery,
  RegisterDeviceInput,
  SandboxApproval,
  SandboxScenarioList,
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
import { webhooksResource } from './webhooks-resource.js';

export { parseRetryAfter } from './transport.js';
export { SDK_VERSION } from './version.js';

export type FetchLike = (input: string, init: RequestInit) => Promise<Response>;

export interface ClientOptions {
  /** Base address including `/api/v1`, for example `https://sandbox.example.mn/api/v1`. */
  baseUrl: string;
  /** The partner API key (`gpk_sandbox_…` or `gpk_live_…`), sent as `X-API-Key`. */
  apiKey: string;
  /**
   * A fetch implementation; defaults to Node's global fetch. It is given `redirect: 'manual'`
   * and must honour it: the SDK refuses redirects rather than send the key after them.
   */
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
  /**
   * Longest answer body read, in bytes, counted as it arrives (after any decompression). A longer
   * one is cut off there and throws `ResponseTooLargeError`; one whose `Content-Length` says it
   * is longer is refused unread. Default 4 MiB (4 194 304), far above any answer of the API but a
   * settlement report (`payments.settlement`) of more than about 10 000 payments: raise it for those.
   */
  maxResponseBytes?: number;
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
     * POST /webhooks/{id}/recover: sends, once and now, every event since `since` (ISO 8601, at
     * most the event retention, 90 days, back) that this webhook has not received, those waiting
     * for a retry included; each once, however often it is called.
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
    /** GET /events: one page of the events of your payments and cases, newest first. */
    list(query?: EventQuery): Promise<EventList>;
    /** Every event matching the query, newest first, page after page (follows `nextCursor`). */
    iterate(query?: Omit<EventQuery, 'cursor'>): AsyncIterableIterator<PaymentEvent>;
    /** GET /events/{id}. */
    get(id: string): Promise<PaymentEvent>;
    /**
     * Every event after `afterSequence`, each once, oldest first (ascending sequence), including
     * the ones still to come: polls `GET /events?afterSequence=` and waits `pollIntervalMs`
     * whenever nothing new came. Runs until `signal` aborts (then it ends cleanly) or a request
     * fails for good (then it throws, after the client's retries). Store each event's `sequence`
     * once it is processed, and pass the highest as `afterSequence` to go on after a restart.
     */
    follow(options: FollowEventsOptions): AsyncIterableIterator<PaymentEvent>;
  };
  /**
   * Cases: when your customer says something went wrong with one of your payments. The service
   * gathers the evidence on its own and answers a `paid_not_updated` case itself when the ministry
   * confirms the payment; the others go to the channel's operator. Each change is also a case event
   * (`case.opened`, `case.updated`, `case.resolved`) for a webhook subscribed to it, and in `events`.
   */
  cases: {
    /**
     * POST /cases: opens a case about one of your payments (another partner's is a `NotFoundError`).
     * A payment has at most one unresolved case per type: a second one throws
     * `CaseAlreadyOpenError`, whose `caseId` is the open case; comment on that one instead.
     */
    open(params: OpenCaseParams): Promise<Case>;
    /** GET /cases/{id}: the case with its comments, oldest first. */
    get(id: string): Promise<CaseDetail>;
    /** GET /cases: one page of your cases, newest first. */
    list(params?: CaseListParams): Promise<CaseList>;
    /** Every case matching the filter, newest first, page after page (follows `nextCursor`). */
    iterate(params?: Omit<CaseListParams, 'cursor'>): AsyncIterableIterator<Case>;
    /**
     * POST /cases/{id}/comments: adds your note (1 to 2000 characters) and answers the case as
     * `get` shows it. A resolved case is a `ConflictError` (`conflict`): open a new one. Not retried
     * on network errors (a repeat would add the note twice).
     */
    comment(id: string, text: string): Promise<CaseDetail>;
  };
  devices: {
    /** Create or update (upsert) a push device of one of your users. */
    register(input: RegisterDeviceInput): Promise<Device>;
  };
  /**
   * Sandbox keys only (the production service answers 404): invoices that make each outcome
   * happen, for testing your failure paths on your own.
   */
  sandbox: {
    /** GET /sandbox/scenarios: every scenario with what it does. */
    scenarios(): Promise<SandboxScenarioList>;
    /**
     * POST /sandbox/invoices: plants an invoice that behaves as the scenario says, yours alone;
     * pay it with `payments.create`. Not retried on network errors (a repeat would plant another).
     */
    createInvoice(input: CreateSandboxInvoiceInput): Promise<Invoice>;
    /** POST /sandbox/approve: the simulated ministry approves your submitted payment. */
    approve(paymentId: string): Promise<SandboxApproval>;
  };
  health: {
    live(): Promise<HealthLive>;
    /** Resolves for 200 and for 503 (then `db` says what is down); never retried. */
    ready(): Promise<HealthReady>;
  };
}

export function createClient(options: ClientOptions): PaymentChannelClient {
  if (!options.baseUrl) throw new TypeError('baseUrl is required');
  if (!options.apiKey) throw new TypeError('apiKey is required');
  const request = createTransport(options);
  return {
    ...invoicesResource(request),
    ...paymentsResource(request),
    ...reportsResource(request),
    ...webhooksResource(request),
    ...eventsResource(request),
    ...casesResource(request),
    ...devicesResource(request),
    ...sandboxResource(request),
    ...healthResource(request),
  };
}
