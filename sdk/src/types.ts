/**
 * Response and request shapes of the payment channel API, written by hand from its partner
 * contract (checked against the service's schemas by the service's own tests).
 * Amounts are tugrik as plain numbers; dates are ISO 8601 strings.
 */

export type InvoiceStatus = 'open' | 'paid' | 'overdue' | 'canceled';
export type PaymentStatus = 'pending' | 'submitted' | 'confirmed' | 'failed' | 'canceled';
export type QrStandard = 'qrpay' | 'govstd';
/** The events of a case you raised: each carries the case as `cases.get` shows it. */
export type CaseEventName = 'case.opened' | 'case.updated' | 'case.resolved';
/**
 * The events a webhook can subscribe to, and the events API lists. A webhook gets only the events
 * it names: the case events come once you add them to its `events`.
 */
export type WebhookEventName = 'payment.submitted' | 'payment.confirmed' | 'payment.failed' | 'payment.canceled' | CaseEventName;
/** Who ended a canceled payment: your `payments.cancel`, the ministry system, or the expiry of an unpaid payment. */
export type PaymentCancelReason = 'partner' | 'ministry' | 'expired';
/** What a delivery can carry: a subscribed event, or `webhook.test` (sent only by `webhooks.test(id)`). */
export type WebhookDeliveryEventName = WebhookEventName | 'webhook.test';
export type DevicePlatform = 'ios' | 'android';

/** An invoice in the service's uniform shape. The ministry `refNum` is never part of it. */
export interface Invoice {
  /** The service's invoice id (UUID): use it in paths and as `invoiceId`. */
  id: string;
  description: string;
  amount: number;
  status: InvoiceStatus;
  dueDate: string | null;
  issuedAt: string | null;
  vehicleNo: string | null;
  /** `register` is the taxpayer number (ТТД). */
  payer: { register: string; name: string } | null;
  payee: { id: string; name: string };
  /** Only on some invoices (for example vehicle tax); a number in some places, a string in others. */
  year?: number | string;
}

/** GET /invoices. `total` is the SUM of the amounts, not a count: use `invoices.length` for that. */
export interface InvoiceList {
  invoices: Invoice[];
  total: number;
}

/** Exactly one filter: taxpayer number, vehicle plate or tax reference. */
export type InvoiceSearch =
  | { ttd: string; vehicle?: never; taxRef?: never }
  | { vehicle: string; ttd?: never; taxRef?: never }
  | { taxRef: string; ttd?: never; vehicle?: never };

export interface BankLink {
  name: string;
  description: string;
  logo: string;
  link: string;
}

/** QR payload; identical for both QR standards. */
export interface QrPay {
  /** Raw EMVCo QR text. */
  qrText: string;
  /** Base64 PNG; show it as `data:image/png;base64,<qrImage>`. */
  qrImage: string;
  shortUrl?: string;
  urls: BankLink[];
}

export interface CreatePaymentInput {
  /** The service's invoice id (UUID), not the ministry refNum. */
  invoiceId: string;
  /** Omit to pay the full invoice amount. */
  amount?: number;
}

export interface CreatePaymentOptions {
  /**
   * Sent as `X-Idempotency-Key`. When omitted the SDK generates a random UUID once per call and
   * reuses it on every retry of that call. Pass your own (and persist it) to make a payment safe
   * to repeat across process restarts.
   */
  idempotencyKey?: string;
  /**
   * Sent as `X-User-Id`: your end user's id, as `userId` in `devices.register`. Once the payment is
   * confirmed, that user's devices get a push. Printable ASCII without spaces.
   */
  userId?: string;
  /**
   * Sent as `X-Partner-Reference`: your own reference of the payment (your transaction id), 1-64
   * printable ASCII characters without spaces. Returned as `partnerReference` on the payment, its
   * events and its settlement entries; part of what the idempotency key is compared on.
   */
  partnerReference?: string;
  signal?: AbortSignal;
}

/** 201 answer of POST /payments (also its idempotent replay, with `message: 'idempotent'`). */
export interface PaymentCreated {
  success: boolean;
  /** The payment id (UUID); not the refNum. */
  id: string;
  status: PaymentStatus;
  amount: number;
  invoiceId: string;
  /** Every invoice the payment covers; may hold more than one. */
  invoiceIds: string[];
  /** Your `X-Partner-Reference`; null when none was sent. */
  partnerReference: string | null;
  /** The QR and bank links: on every 201, the idempotent replay included. */
  qrpay: QrPay;
  /** `'idempotent'` marks a replayed cached response. */
  message?: string;
}

/** GET /payments/{id}, after a live confirmation with the ministry. */
export interface Payment {
  id: string;
  status: PaymentStatus;
  amount: number;
  invoiceId: string;
  invoiceIds: string[];
  /** Your `X-Partner-Reference`; null when none was sent. */
  partnerReference: string | null;
  /** Time of confirmation; absent until `confirmed`. */
  paidAt?: string;
}

export interface PaymentCanceled {
  id: string;
  canceled: true;
}

/** 422 body of POST /payments. */
export interface PaymentFailedBody {
  success: false;
  refNum: string;
  message: string;
}

export interface SettlementEntry {
  refNum: string;
  /** The settled payment's id, as POST /payments returned it. */
  paymentId: string;
  /** That payment's `X-Partner-Reference`; null when none was sent. */
  partnerReference: string | null;
  amount: number;
  payerReg: string;
  payerName: string;
  description: string;
  date: string;
}

export interface SettlementReport {
  /** YYYY-MM-DD */
  financeDay: string;
  success: boolean;
  entries: SettlementEntry[];
}

/** All five fields are numbers; `totalAmountDue` is an amount, the others are counts. */
export interface Summary {
  total: number;
  open: number;
  overdue: number;
  paid: number;
  totalAmountDue: number;
}

export interface PaymentListItem {
  id: string;
  refNum: string;
  status: PaymentStatus;
  amount: number;
  /** The originating ministry system. */
  source: string;
  partnerId: string;
  /** Your `X-Partner-Reference`; null when none was sent. */
  partnerReference: string | null;
  createdAt: string;
}

export interface PaymentList {
  items: PaymentListItem[];
  total: number;
  page: number;
  limit: number;
}

export interface PaymentListQuery {
  page?: number;
  /** At most 100. */
  limit?: number;
}

export interface CreateWebhookInput {
  /** https URL of your receiver (plain http only against a local development service). */
  url: string;
  /** HMAC-SHA256 key for `X-Service-Signature`; this service wants 16 to 256 characters. */
  secret: string;
  events: WebhookEventName[];
}

/** Why a webhook is disabled: you turned it off (`manual`), or every attempt failed for 5 days (`failing`). */
export type WebhookDisabledReason = 'manual' | 'failing';

/** A webhook record as listed: never with its secret. */
export interface Webhook {
  id: string;
  url: string;
  events: WebhookEventName[];
  /** false while disabled: nothing is sent; the events meanwhile wait for `webhooks.recover`. */
  enabled: boolean;
  /** null while enabled. */
  disabledReason: WebhookDisabledReason | null;
  createdAt: string;
}

/** POST /webhooks answer: the only one that carries the secret. */
export interface WebhookCreated extends Webhook {
  secret: string;
}

/** PATCH /webhooks/{id}: at least one field; `url` and `events` follow the rules of create. */
export interface UpdateWebhookInput {
  url?: string;
  events?: WebhookEventName[];
  /** false disables the webhook; true enables it again and its pending deliveries go on. */
  enabled?: boolean;
}

/** POST /webhooks/{id}/rotate-secret answer: the new secret, shown only here. */
export interface WebhookSecretRotated {
  id: string;
  secret: string;
  /** Until then the previous secret signs deliveries too (a second `webhook-signature`). */
  previousSecretExpiresAt: string;
}

/** POST /webhooks/{id}/recover answer. */
export interface WebhookRecoverQueued {
  /** Deliveries queued or made due now (retries waiting included): each missed event once; 0 when asked again while they are pending. */
  queued: number;
}

export interface WebhookDeleted {
  id: string;
  deleted: true;
}

export type WebhookDeliveryStatus = 'pending' | 'succeeded' | 'failed';

/** One entry of a webhook's delivery log: an attempt made, or the next attempt of a pending delivery. */
export interface WebhookDeliveryAttempt {
  event: WebhookDeliveryEventName;
  /** The event's id: as `eventId` in the body, `webhook-id`, and in `events.get`. */
  eventId: string;
  /** The payment the event is about (of a case event, the case's payment); null for `webhook.test`. */
  paymentId: string | null;
  /** Same across the retries of one delivery (also sent as `X-Service-Delivery`). */
  deliveryId: string;
  /** `pending`: not yet sent, due at `createdAt`. */
  status: WebhookDeliveryStatus;
  /** Your receiver's HTTP status; null when it could not be reached or not yet tried. */
  statusCode: number | null;
  /** 0 for a pending entry. */
  durationMs: number;
  error: string | null;
  /** 1 for the first attempt. */
  attempt: number;
  /** When the next attempt is due; null when delivered or given up. */
  nextRetryAt: string | null;
  createdAt: string;
}

/** GET /webhooks/{id}/deliveries: newest first. */
export interface WebhookDeliveryList {
  items: WebhookDeliveryAttempt[];
  /** Pass as `cursor` for the next page; null on the last one. */
  nextCursor: string | null;
}

export interface WebhookDeliveryQuery {
  status?: WebhookDeliveryStatus;
  paymentId?: string;
  cursor?: string;
  /** 1 to 100 (default 100). */
  limit?: number;
}

/**
 * What the customer says went wrong, which decides the case's due time: `paid_not_updated` (paid,
 * and the ministry or your app still shows the invoice unpaid; the service answers it itself when
 * the ministry confirms the payment), `paid_twice`, `wrong_amount`, `canceled_not_reversed` (a
 * canceled payment whose money did not come back), `other`.
 */
export type CaseType = 'paid_not_updated' | 'paid_twice' | 'wrong_amount' | 'canceled_not_reversed' | 'other';
/** `open` (raised), `in_progress` (an operator took it), `escalated` (`dueAt` passed unresolved), `resolved` (see `resolution`). */
export type CaseStatus = 'open' | 'in_progress' | 'escalated' | 'resolved';
/**
 * How a case was answered: `confirmed` (the ministry confirms the payment), `reversed` (the money
 * was returned), `refunded_by_partner` (you refunded the customer), `no_fault_found`, `other`.
 */
export type CaseOutcome = 'confirmed' | 'reversed' | 'refunded_by_partner' | 'no_fault_found' | 'other';
/** Who answered a case: the service's own check (a `paid_not_updated` case the ministry confirms), or the channel's operator. */
export type CaseResolver = 'service' | 'operator';
/** Who wrote a comment: you (`partner`), or the channel's operator. */
export type CaseCommentAuthor = 'partner' | 'operator';

/** How a resolved case was answered. */
export interface CaseResolution {
  outcome: CaseOutcome;
  /** The ministry's reference of its answer, when it gave one. */
  ministryReference?: string;
  /** What was found and done, for you to act on and tell the customer. */
  note: string;
  resolvedAt: string;
  by: CaseResolver;
}

/** One note on a case, yours or the operator's. */
export interface CaseComment {
  author: CaseCommentAuthor;
  text: string;
  createdAt: string;
}

/** A case you raised about one of your payments, as `cases.open` answers it and `cases.list` lists it. */
export interface Case {
  /** The case id (UUID). */
  id: string;
  /** The payment the case is about: one of yours. */
  paymentId: string;
  type: CaseType;
  status: CaseStatus;
  /** What the customer says went wrong, as you wrote it. */
  description: string;
  createdAt: string;
  /**
   * When the case is due to be answered: `createdAt` plus the turnaround of its type (by default
   * 24 h for `paid_not_updated`, 120 h for the others). Past it, an unresolved case is `escalated`.
   */
  dueAt: string;
  updatedAt: string;
  /** null until the case is `resolved`. */
  resolution: CaseResolution | null;
}

/**
 * A case with its comments, as `cases.get` and `cases.comment` answer it. It is also the `data` of
 * every case event (`case.opened`, `case.updated`, `case.resolved`), in a webhook delivery and in
 * `GET /events`: the case as it was just after the event.
 */
export interface CaseDetail extends Case {
  /** Oldest first: yours and the operator's. */
  comments: CaseComment[];
}

/** GET /cases: newest first. */
export interface CaseList {
  items: Case[];
  /** Pass as `cursor` for the next page; null on the last one. */
  nextCursor: string | null;
}

/** POST /cases. */
export interface OpenCaseParams {
  /** One of your payments (the payment id, not the refNum). */
  paymentId: string;
  type: CaseType;
  /** What the customer says went wrong, 1 to 2000 characters. */
  description: string;
}

/** GET /cases. */
export interface CaseListParams {
  status?: CaseStatus;
  paymentId?: string;
  /** `nextCursor` of the page before; it works only with the key of the partner it was given to. */
  cursor?: string;
  /** 1 to 100 (default 20). */
  limit?: number;
}

/**
 * The `data` of each event, the same in `GET /events` and in a webhook delivery: the payment
 * events carry the payment's fields, the case events the case with its comments.
 */
export interface PaymentEventData {
  /** `partnerReference` in each: your `X-Partner-Reference` of the payment, null when none was sent. */
  'payment.submitted': { id: string; invoiceId: string; partnerReference: string | null };
  'payment.confirmed': { id: string; amount: number; partnerReference: string | null };
  /** The ministry system rejected or lost a payment after it was accepted. */
  'payment.failed': { id: string; invoiceId: string; partnerReference: string | null };
  'payment.canceled': { id: string; invoiceId: string; reason: PaymentCancelReason; partnerReference: string | null };
  /** You opened a case. */
  'case.opened': CaseDetail;
  /** A comment (yours or the operator's), an operator taking the case, or its escalation at `dueAt`. */
  'case.updated': CaseDetail;
  /** The case was answered: `data.resolution` says how. */
  'case.resolved': CaseDetail;
}

/** `PaymentEventData` by the name that says what it holds: the data of every event, payment and case ones. */
export type EventData = PaymentEventData;

/**
 * Something that happened to one of your payments or cases (GET /events). `sequence` is its position in
 * your feed: it increases in the order events become readable, so once you have read an event,
 * none with a lower sequence appears later (gaps are normal). `type` narrows `data`; an event of a
 * type this SDK version does not know comes through as an `UnknownPaymentEvent`.
 */
export type PaymentEvent = KnownPaymentEvent | UnknownPaymentEvent;

/** A `PaymentEvent` of a type this SDK version knows: `type` narrows `data`. */
export type KnownPaymentEvent = {
  [E in WebhookEventName]: { id: string; type: E; createdAt: string; sequence: number; data: PaymentEventData[E] };
}[WebhookEventName];

/** A case event of `GET /events`: its `data` is the case (`CaseDetail`). */
export type CaseEvent = Extract<KnownPaymentEvent, { type: CaseEventName }>;

declare const unknownEventName: unique symbol;

/**
 * The name of an event type this SDK version does not know (one the service added later). At run
 * time it is the name as the service sent it, a string: `String(event.type)` reads it. It is typed
 * apart from `string` on purpose: TypeScript cannot narrow a union that has a `string` member
 * (`type: string & {}` would leave `data` untyped even after `type === 'payment.confirmed'`), so
 * with this type a comparison with a known name still narrows `data`.
 */
export type UnknownEventName = { readonly [unknownEventName]: 'an event type this SDK version does not know' };

/**
 * An event of a type this SDK version does not know, passed through as the service sent it
 * (never refused, never thrown on): its `data` untyped. Skip it, or log `String(event.type)`.
 */
export interface UnknownPaymentEvent {
  id: string;
  type: UnknownEventName;
  createdAt: string;
  sequence: number;
  data: Record<string, unknown>;
}

export interface EventList {
  /** Newest first; with `afterSequence`, oldest first. */
  items: PaymentEvent[];
  /** Always null with `afterSequence`: read on from the last item's `sequence`. */
  nextCursor: string | null;
}

export interface EventQuery {
  type?: WebhookEventName;
  paymentId?: string;
  /** ISO 8601, inclusive. */
  from?: string;
  /** ISO 8601, exclusive. */
  to?: string;
  cursor?: string;
  /** Oldest first, the events after this sequence (0: from the start). Not with `cursor`, `from` or `to`. */
  afterSequence?: number;
  /** 1 to 100 (default 20). */
  limit?: number;
}

/** `events.follow`: where to start, what to follow, and how to stop. */
export interface FollowEventsOptions {
  /** The highest sequence already processed (0: from the start); events after it are yielded. */
  afterSequence: number;
  type?: WebhookEventName;
  /** Stops following: the iterator ends without an error. */
  signal?: AbortSignal;
  /** Wait between polls that found nothing new. Default 1000 ms. */
  pollIntervalMs?: number;
  /** Events asked for per poll, 1 to 100. Default 100. */
  limit?: number;
}

/** 202 answer of POST /webhooks/{id}/test: the queued test delivery. */
export interface WebhookTestQueued {
  /** Its attempts show in the delivery log under this id (also `X-Service-Delivery`). */
  deliveryId: string;
  event: 'webhook.test';
}

/** 202 answer of POST /webhooks/{id}/deliveries/{deliveryId}/redeliver. */
export interface WebhookRedeliveryQueued {
  deliveryId: string;
  status: 'pending';
}

export interface RegisterDeviceInput {
  /** The partner's end-user id. */
  userId: string;
  /** Firebase Cloud Messaging push token. */
  fcmToken: string;
  platform: DevicePlatform;
}

export interface Device {
  id: string;
  platform: DevicePlatform;
  createdAt: string;
}

export interface HealthLive {
  status: string;
  timestamp: string;
}

export interface HealthReady {
  status: string;
  /** Database connectivity. */
  db: string;
  timestamp: string;
}

/**
 * Body of a webhook delivery (`X-Service-Event` names the event too). `eventId` is also
 * `webhook-id`. `event` narrows `data`; an event this SDK version does not know comes through as an
 * `UnknownWebhookMessage`.
 */
export type WebhookMessage = KnownWebhookMessage | UnknownWebhookMessage;

/** `data` of a `webhook.test` delivery (`webhooks.test(id)`). */
export interface WebhookTestData {
  webhookId: string;
  message: string;
  sentAt: string;
}

/** The `data` of every event a delivery can carry: the payment and case events and `webhook.test`. */
export type WebhookEventData = PaymentEventData & { 'webhook.test': WebhookTestData };

/** A `WebhookMessage` of an event this SDK version knows: `event` narrows `data`. */
export type KnownWebhookMessage = {
  [E in WebhookDeliveryEventName]: { event: E; eventId: string; deliveryId: string; createdAt: string; data: WebhookEventData[E] };
}[WebhookDeliveryEventName];

/** A delivery of an event type this SDK version does not know: accepted when its signature is right, `data` untyped. */
export interface UnknownWebhookMessage {
  event: UnknownEventName;
  eventId: string;
  deliveryId: string;
  createdAt: string;
  data: Record<string, unknown>;
}

/** The outcomes the sandbox can make happen (GET /sandbox/scenarios lists them with what each does). */
export type SandboxScenarioName =
  | 'approve'
  | 'approve-later'
  | 'reject'
  | 'fail-after-submit'
  | 'ministry-unavailable'
  | 'never-approve'
  | 'partial'
  | 'linked'
  | 'already-paid';

/** GET /sandbox/scenarios. */
export interface SandboxScenarioList {
  scenarios: { name: SandboxScenarioName; description: string }[];
}

/** POST /sandbox/invoices (sandbox keys only). */
export interface CreateSandboxInvoiceInput {
  scenario: SandboxScenarioName;
  /** Tugrik, more than 0, at most 2 decimals; default 10000. */
  amount?: number;
  /** `approve-later`: approved this long after the payment (default 30); `never-approve`: the payment expires this long after it. 1-3600. */
  delaySeconds?: number;
  /** `ministry-unavailable`: how long from the invoice's creation paying it answers 503 (default 30). 1-3600. */
  durationSeconds?: number;
}

/** POST /sandbox/approve. */
export interface SandboxApproval {
  id: string;
  approved: true;
}
