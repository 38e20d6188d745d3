/**
 * Every error answer of the API carries one code of this closed list (docs/errors.md, the OpenAPI
 * document's enums and the SDK's ErrorCode union name the same codes; test/unit/error-codes.test.ts
 * holds them in step). Nothing below http/ knows a status code: the errors plugin maps each code
 * to its status in one table.
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

export type ErrorCode = (typeof ERROR_CODES)[number];

/** The codes of a 422 payment refusal `{ success: false, refNum, message, code }`. */
export const REFUSAL_CODES = ['invoice_not_payable', 'amount_not_accepted', 'ministry_rejected'] as const satisfies readonly ErrorCode[];
export type RefusalCode = (typeof REFUSAL_CODES)[number];

export const isErrorCode = (value: unknown): value is ErrorCode => typeof value === 'string' && (ERROR_CODES as readonly string[]).includes(value);

/** The ministry's own words for an amount it does not take (the simulator's and the adapters' reason text). */
const MINISTRY_AMOUNT_REASON = /amount does not match/i;

/**
 * The code of a payment the ministry refused by its reason text: the ministry answers in words
 * only, so this is the one place they are read. An amount it does not take is
 * `amount_not_accepted`; every other reason is `ministry_rejected`.
 */
export function ministryRefusalCode(reason: string): RefusalCode {
  return MINISTRY_AMOUNT_REASON.test(reason) ? 'amount_not_accepted' : 'ministry_rejected';
}

export class DomainError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = new.target.name;
  }
}

export class NotFoundError extends DomainError {
  constructor(what: string) {
    super('not_found', `${what} not found`);
  }
}

/** 409: `idempotency_key_in_use` while a first request with the key is at work; `webhook_limit_reached`; `conflict` otherwise. */
export class ConflictError extends DomainError {
  constructor(message: string, code: 'conflict' | 'idempotency_key_in_use' | 'webhook_limit_reached' = 'conflict') {
    super(code, message);
  }
}

/** 409 `case_already_open`: the payment has an unresolved case of this type; `caseId` names it. */
export class CaseAlreadyOpenError extends DomainError {
  constructor(readonly caseId: string) {
    super('case_already_open', 'This payment already has an open case of this type');
  }
}

/** 422 in the error shape: the idempotency key was used with another request. */
export class UnprocessableError extends DomainError {
  constructor(message: string, code: 'idempotency_key_reuse' = 'idempotency_key_reuse') {
    super(code, message);
  }
}

/** One refused field: `path` is a JSON pointer into the request part (`/amount`, `/cursor`); '' is the part as a whole. */
export interface Violation {
  path: string;
  message: string;
}

export class InvalidRequestError extends DomainError {
  readonly violations: string[];
  readonly errors: Violation[];

  /** Messages that all concern the field at `path` (a JSON pointer, '' for the request as a whole). */
  constructor(violations: string[], path = '') {
    super('invalid_request', violations.join('; '));
    this.violations = violations;
    this.errors = violations.map((message) => ({ path, message }));
  }
}

/** A missing, unknown, expired or other-environment credential. */
export class UnauthenticatedError extends DomainError {
  constructor(message: string) {
    super('unauthenticated', message);
  }
}

/** `partner_inactive` for a partner whose account is off; `forbidden` for other refusals (the operator console's). */
export class ForbiddenError extends DomainError {
  constructor(message: string, code: 'partner_inactive' | 'forbidden' = 'forbidden') {
    super(code, message);
  }
}

/** The payment is refused (the invoice, the amount, or the ministry): partners get its refNum with the reason. */
export class PaymentRejectedError extends DomainError {
  constructor(
    readonly refNum: string,
    message: string,
    readonly refusal: RefusalCode,
  ) {
    super(refusal, message);
  }
}

/** Upstream failure; partners only ever see the generic message. */
export class UpstreamUnavailableError extends DomainError {
  constructor(
    readonly detail: string,
    options?: { cause?: unknown },
  ) {
    super('ministry_unavailable', 'Service temporarily unavailable, please retry later', options);
  }
}

/**
 * The code of a payment that failed at or after its submit, by the move that failed it: a linked
 * invoice the payment could not hold (taken, paid, or unknown to the ministry) makes the invoice
 * not payable; a refusal at submit is read from the ministry's reason; every other end
 * (rejected, forgotten or never received by the ministry) is the ministry's refusal.
 */
export function failedPaymentCode(statusEvent: string | null, failureReason: string | null): RefusalCode {
  if (statusEvent === 'linked_invoice_taken') return 'invoice_not_payable';
  if (statusEvent === 'ministry_refused') return ministryRefusalCode(failureReason ?? '');
  return 'ministry_rejected';
}

/** The service's own reasons for an invoice that cannot be paid (paid, canceled, held, a linked one taken). */
const NOT_PAYABLE_REASON = /^(Invoice is already |Another payment for this invoice is in progress|An invoice the ministry settles together with this one)/;

/**
 * The code of a stored refusal as a replay gives it: the stored code, or, for a refusal stored
 * before codes were, the code its reason gives (answers expire with IDEMPOTENCY_TTL_MS).
 */
export function replayedRefusalCode(stored: unknown, message: string): RefusalCode {
  if ((REFUSAL_CODES as readonly unknown[]).includes(stored)) return stored as RefusalCode;
  return NOT_PAYABLE_REASON.test(message) ? 'invoice_not_payable' : ministryRefusalCode(message);
}
