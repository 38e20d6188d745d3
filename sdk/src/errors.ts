/**
 * Every `code` an error answer of the API carries, one closed list: the service's docs/errors.md
 * says for each its status, whether to retry and what to tell the customer.
 */
export const ERROR_CODES = [
  'invalid_request',
  'unauthenticated',
  'partner_inactive',
  'forbidden',
  'not_found',
  'request_timeout',
  'idempotency_key_in_use',
  'illegal_transition',
  'webhook_limit_reached',
  'case_already_open',
  'conflict',
  'payload_too_large',
  'uri_too_long',
  'unsupported_media_type',
  'misdirected_request',
  'idempotency_key_reuse',
  'invoice_not_payable',
  'amount_not_accepted',
  'ministry_rejected',
  'rate_limited',
  'headers_too_large',
  'internal_error',
  'ministry_unavailable',
  'service_unavailable',
] as const;

/** The `code` of an error answer. */
export type ErrorCode = (typeof ERROR_CODES)[number];

/** The `code` of a refused payment (`PaymentFailedError`). */
export type PaymentRefusalCode = Extract<ErrorCode, 'invoice_not_payable' | 'amount_not_accepted' | 'ministry_rejected'>;

/** One refused field of a 400: `path` is a JSON pointer into the body, query, path or headers (`/amount`); '' for the request as a whole. */
export interface FieldError {
  path: string;
  message: string;
}

/** Any non-2xx answer of the API. */
export class ApiError extends Error {
  override name = 'ApiError';
  /** HTTP status code. */
  readonly status: number;
  /** Parsed JSON body when the answer was JSON, otherwise its text (or undefined when empty). */
  readonly body: unknown;
  /**
   * The `X-Request-Id` of the answer (the body's `requestId` when the header did not come through);
   * quote it to the operator when reporting a problem.
   */
  readonly requestId: string | undefined;
  /** The body's `code`, one of ERROR_CODES; undefined when the answer was not the service's (a proxy's page, a redirect). */
  readonly code: ErrorCode | undefined;

  constructor(status: number, body: unknown, requestId: string | undefined, message?: string) {
    super(message ?? describe(status, body));
    this.status = status;
    this.body = body;
    this.requestId = requestId ?? requestIdOf(body);
    this.code = codeOf(body);
  }
}

/** 400 `invalid_request`: one entry in `messages` and in `errors` per violation (unknown or wrongly typed field, bad UUID, ...). */
export class BadRequestError extends ApiError {
  override name = 'BadRequestError';
  readonly messages: string[];
  /** The refused fields, each with its JSON pointer (`/amount`) and message. */
  readonly errors: FieldError[];

  constructor(body: unknown, requestId: string | undefined) {
    const raw = messageOf(body);
    const messages = Array.isArray(raw) ? raw.map(String) : typeof raw === 'string' ? [raw] : [];
    super(400, body, requestId, messages.length > 0 ? `Bad request: ${messages.join('; ')}` : undefined);
    this.messages = messages;
    this.errors = fieldErrorsOf(body);
  }
}

/** 401 `unauthenticated`: missing or wrong API key, or a key of the other environment. */
export class AuthenticationError extends ApiError {
  override name = 'AuthenticationError';
}

/** 403 `partner_inactive`: the partner is inactive. */
export class ForbiddenError extends ApiError {
  override name = 'ForbiddenError';
}

/** 404 `not_found`: invoice, payment or refNum not found. */
export class NotFoundError extends ApiError {
  override name = 'NotFoundError';
}

/**
 * 409: the move is not allowed in the current state (`illegal_transition`, for example canceling a
 * failed payment; `conflict`, for example a comment on a resolved case), the same idempotency key is
 * still being processed (`idempotency_key_in_use`), the partner has the most webhooks allowed
 * (`webhook_limit_reached`), or the payment already has an unresolved case of that type
 * (`case_already_open`, thrown as its subclass `CaseAlreadyOpenError`).
 */
export class ConflictError extends ApiError {
  override name = 'ConflictError';
}

/**
 * 409 `case_already_open` of `cases.open`: the payment already has an unresolved case of this
 * type. `caseId` is that case: add what the customer says to it with `cases.comment`.
 */
export class CaseAlreadyOpenError extends ConflictError {
  override name = 'CaseAlreadyOpenError';
  declare readonly code: 'case_already_open';
  /** The case already open for this payment and type. */
  readonly caseId: string;

  constructor(body: { caseId: string }, requestId: string | undefined) {
    super(409, body, requestId);
    this.caseId = body.caseId;
  }
}

/** 422 without a failed-payment body: an idempotency key reused with another body (`idempotency_key_reuse`). */
export class UnprocessableEntityError extends ApiError {
  override name = 'UnprocessableEntityError';
}

/**
 * 422 `{ success: false, refNum, message, code, requestId }`: the payment was refused, `code`
 * saying why: `invoice_not_payable` (paid, canceled, or held by another payment),
 * `amount_not_accepted`, or `ministry_rejected`.
 */
export class PaymentFailedError extends UnprocessableEntityError {
  override name = 'PaymentFailedError';
  /** The ministry-side reference number of the invoice. */
  readonly refNum: string;
  declare readonly code: PaymentRefusalCode | undefined;

  constructor(body: { refNum: string; message?: unknown }, requestId: string | undefined) {
    super(422, body, requestId, `Payment failed for ${body.refNum}: ${typeof body.message === 'string' ? body.message : 'rejected'}`);
    this.refNum = body.refNum;
  }
}

/** 429 `rate_limited`: a rate limit was exceeded; the request did not reach the business logic. */
export class RateLimitError extends ApiError {
  override name = 'RateLimitError';
  /** Seconds to wait, from `Retry-After`, when the answer carried it. */
  readonly retryAfter: number | undefined;

  constructor(body: unknown, requestId: string | undefined, retryAfter: number | undefined) {
    super(429, body, requestId);
    this.retryAfter = retryAfter;
  }
}

/** 5xx: `ministry_unavailable`, `service_unavailable` (the database away) or `internal_error`; the message is generic by design. */
export class ServerError extends ApiError {
  override name = 'ServerError';
}

/**
 * A 3xx answer, which the SDK never follows: fetch would send the `X-API-Key` header, and on a
 * 307 or 308 the body and idempotency key too, to wherever `Location` points, another host
 * included. The message names the status and the location (the API key, should the location
 * repeat it, replaced by `[redacted]`). Usually a wrong `baseUrl` (`http` for `https`, a
 * missing `/api/v1`, an old host name). Never retried.
 */
export class RedirectError extends ApiError {
  override name = 'RedirectError';
  /**
   * The `Location` header, undefined when there was none or it could not be read: a browser's
   * fetch hides redirects behind an opaque answer with status 0.
   */
  readonly location: string | undefined;

  constructor(status: number, location: string | undefined, requestId: string | undefined, message: string) {
    super(status, undefined, requestId, message);
    this.location = location;
  }
}

/**
 * An answer longer than the client's `maxResponseBytes`. Reading stops at the cap and the
 * connection is dropped, so a broken or hostile server cannot fill the process's memory.
 * Never retried: the same request would get the same answer.
 */
export class ResponseTooLargeError extends Error {
  override name = 'ResponseTooLargeError';
  /** HTTP status code of the answer. */
  readonly status: number;
  /** The cap that was exceeded, in bytes. */
  readonly maxResponseBytes: number;
  /** The `X-Request-Id` of the answer, when it carried one. */
  readonly requestId: string | undefined;

  constructor(message: string, status: number, maxResponseBytes: number, requestId: string | undefined) {
    super(message);
    this.status = status;
    this.maxResponseBytes = maxResponseBytes;
    this.requestId = requestId;
  }
}

/** No HTTP answer at all: connection refused or reset, DNS failure, or the client-side timeout. */
export class NetworkError extends Error {
  override name = 'NetworkError';
  /** True when the SDK's own `timeoutMs` expired. */
  readonly timedOut: boolean;

  constructor(message: string, options: { cause?: unknown; timedOut?: boolean } = {}) {
    super(message, { cause: options.cause });
    this.timedOut = options.timedOut ?? false;
  }
}

/** Builds the typed error for a non-2xx answer. */
export function errorFromResponse(status: number, body: unknown, requestId: string | undefined, retryAfter: number | undefined): ApiError {
  switch (status) {
    case 400:
      return new BadRequestError(body, requestId);
    case 401:
      return new AuthenticationError(status, body, requestId);
    case 403:
      return new ForbiddenError(status, body, requestId);
    case 404:
      return new NotFoundError(status, body, requestId);
    case 409:
      return isCaseAlreadyOpen(body) ? new CaseAlreadyOpenError(body, requestId) : new ConflictError(status, body, requestId);
    case 422:
      return isFailedPayment(body) ? new PaymentFailedError(body, requestId) : new UnprocessableEntityError(status, body, requestId);
    case 429:
      return new RateLimitError(body, requestId, retryAfter);
    default:
      return status >= 500 ? new ServerError(status, body, requestId) : new ApiError(status, body, requestId);
  }
}

function isFailedPayment(body: unknown): body is { refNum: string; message?: unknown } {
  return typeof body === 'object' && body !== null && typeof (body as { refNum?: unknown }).refNum === 'string';
}

function isCaseAlreadyOpen(body: unknown): body is { code: 'case_already_open'; caseId: string } {
  if (typeof body !== 'object' || body === null) return false;
  const { code, caseId } = body as { code?: unknown; caseId?: unknown };
  return code === 'case_already_open' && typeof caseId === 'string';
}

function codeOf(body: unknown): ErrorCode | undefined {
  const code = typeof body === 'object' && body !== null ? (body as { code?: unknown }).code : undefined;
  return (ERROR_CODES as readonly unknown[]).includes(code) ? (code as ErrorCode) : undefined;
}

function requestIdOf(body: unknown): string | undefined {
  const id = typeof body === 'object' && body !== null ? (body as { requestId?: unknown }).requestId : undefined;
  return typeof id === 'string' ? id : undefined;
}

function fieldErrorsOf(body: unknown): FieldError[] {
  const errors = typeof body === 'object' && body !== null ? (body as { errors?: unknown }).errors : undefined;
  if (!Array.isArray(errors)) return [];
  return errors
    .filter((e): e is { path: unknown; message: unknown } => typeof e === 'object' && e !== null)
    .map((e) => ({ path: typeof e.path === 'string' ? e.path : '', message: String(e.message) }));
}

function messageOf(body: unknown): unknown {
  return typeof body === 'object' && body !== null ? (body as { message?: unknown }).message : undefined;
}

function describe(status: number, body: unknown): string {
  const message = messageOf(body);
  if (typeof message === 'string' && message !== '') return `HTTP ${status}: ${message}`;
  if (Array.isArray(message) && message.length > 0) return `HTTP ${status}: ${message.map(String).join('; ')}`;
  if (typeof body === 'string' && body !== '') return `HTTP ${status}: ${body.slice(0, 200)}`;
  return `HTTP ${status}`;
}
