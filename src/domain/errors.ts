/**
 * Every way a use case can refuse, as a closed set of codes. Nothing below http/ knows a status
 * code: the errors plugin maps each code to its status and body in one table.
 */
export type ErrorCode =
  | 'invalid_request'
  | 'unauthenticated'
  | 'forbidden'
  | 'not_found'
  | 'conflict'
  | 'illegal_transition'
  | 'unprocessable'
  | 'payment_rejected'
  | 'upstream_unavailable';

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

export class ConflictError extends DomainError {
  constructor(message: string) {
    super('conflict', message);
  }
}

export class UnprocessableError extends DomainError {
  constructor(message: string) {
    super('unprocessable', message);
  }
}

export class InvalidRequestError extends DomainError {
  constructor(readonly violations: string[]) {
    super('invalid_request', violations.join('; '));
  }
}

/** A missing, unknown, expired or other-environment credential. */
export class UnauthenticatedError extends DomainError {
  constructor(message: string) {
    super('unauthenticated', message);
  }
}

export class ForbiddenError extends DomainError {
  constructor(message: string) {
    super('forbidden', message);
  }
}

/** The ministry refused the payment: partners get its refNum with the reason. */
export class PaymentRejectedError extends DomainError {
  constructor(
    readonly refNum: string,
    message: string,
  ) {
    super('payment_rejected', message);
  }
}

/** Upstream failure; partners only ever see the generic message. */
export class UpstreamUnavailableError extends DomainError {
  constructor(
    readonly detail: string,
    options?: { cause?: unknown },
  ) {
    super('upstream_unavailable', 'Service temporarily unavailable, please retry later', options);
  }
}
