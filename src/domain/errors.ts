/** Errors the services raise; the HTTP error handler maps each to its status and body. */
export class AppError extends Error {
  constructor(
    readonly statusCode: number,
    message: string,
  ) {
    super(message);
    this.name = new.target.name;
  }
}

export class NotFoundError extends AppError {
  constructor(what: string) {
    super(404, `${what} not found`);
  }
}

export class ConflictError extends AppError {
  constructor(message: string) {
    super(409, message);
  }
}

export class UnprocessableError extends AppError {
  constructor(message: string) {
    super(422, message);
  }
}

export class BadRequestError extends AppError {
  constructor(readonly violations: string[]) {
    super(400, violations.join('; '));
  }
}

/** The ministry refused the payment: SPEC's 422 `{ success:false, refNum, message }`. */
export class PaymentRejectedError extends AppError {
  constructor(
    readonly refNum: string,
    message: string,
  ) {
    super(422, message);
  }
}

/** Upstream failure; partners only ever see the generic message. */
export class UpstreamUnavailableError extends AppError {
  constructor(readonly detail: string, options?: { cause?: unknown }) {
    super(503, 'Service temporarily unavailable, please retry later');
    if (options?.cause) this.cause = options.cause;
  }
}
