import { STATUS_CODES } from 'node:http';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ErrorObject } from 'ajv';
import { CaseAlreadyOpenError, DomainError, InvalidRequestError, PaymentRejectedError, UpstreamUnavailableError, type ErrorCode, type Violation } from '../../domain/errors.js';
import { validationViolations } from '../validation.js';
import { redactDbError } from '../db-error.redactor.js';
import { isDatabaseUnavailable } from '../../db/pg-error.js';

/** The one place an error code becomes an HTTP status. */
export const STATUS_OF: Record<ErrorCode, number> = {
  invalid_request: 400,
  unauthenticated: 401,
  partner_inactive: 403,
  forbidden: 403,
  not_found: 404,
  request_timeout: 408,
  idempotency_key_in_use: 409,
  illegal_transition: 409,
  webhook_limit_reached: 409,
  case_already_open: 409,
  conflict: 409,
  payload_too_large: 413,
  uri_too_long: 414,
  unsupported_media_type: 415,
  misdirected_request: 421,
  idempotency_key_reuse: 422,
  invoice_not_payable: 422,
  amount_not_accepted: 422,
  ministry_rejected: 422,
  rate_limited: 429,
  headers_too_large: 431,
  internal_error: 500,
  ministry_unavailable: 503,
  service_unavailable: 503,
};

/** The codes answered with `status`, in the closed list's order: the OpenAPI document's enum of that status. */
export function codesOfStatus(status: number): ErrorCode[] {
  return (Object.keys(STATUS_OF) as ErrorCode[]).filter((code) => STATUS_OF[code] === status);
}

/** The error shape: `{ statusCode, message, error, code, requestId }`; `requestId` is the answer's X-Request-Id. */
export function errorBody(code: ErrorCode, message: string, requestId: string) {
  const statusCode = STATUS_OF[code];
  return { statusCode, message, error: STATUS_CODES[statusCode] ?? 'Error', code, requestId };
}

/** The 400 shape: one `message` entry and one `errors` entry (`{ path, message }`) per refused field. */
export function badRequestBody(errors: Violation[], requestId: string) {
  const list = errors.length > 0 ? errors : [{ path: '', message: 'request is invalid' }];
  return {
    statusCode: 400 as const,
    message: list.map((e) => e.message),
    error: 'Bad Request' as const,
    code: 'invalid_request' as const,
    requestId,
    errors: list,
  };
}

/** Answers `code` in the error shape, with the request's id (the X-Request-Id the answer carries). */
export function sendError(reply: FastifyReply, code: ErrorCode, message: string) {
  if (code === 'invalid_request') return sendBadRequest(reply, [{ path: '', message }]);
  return reply.code(STATUS_OF[code]).send(errorBody(code, message, reply.request.id));
}

function sendBadRequest(reply: FastifyReply, errors: Violation[]) {
  return reply.code(400).type('application/json').send(badRequestBody(errors, reply.request.id));
}

const ROUTE_NOT_FOUND = 'Route not found';

/** Seconds a client is asked to wait when the database is away: about one reconnect attempt. */
export const DATABASE_RETRY_AFTER_SECONDS = 5;
export const DATABASE_UNAVAILABLE = 'Service temporarily unavailable; retry later';

/**
 * The database is away (a restart, a failover, a killed connection): the request may succeed
 * once it is back, so it is a 503 the client can retry, not a 500. Logged without the stack:
 * an outage fails every request at once, and each line would say the same.
 */
function sendDatabaseUnavailable(err: Error, request: FastifyRequest, reply: FastifyReply) {
  request.log.warn({ reason: err.message }, 'database unavailable');
  return sendError(reply.header('retry-after', String(DATABASE_RETRY_AFTER_SECONDS)), 'service_unavailable', DATABASE_UNAVAILABLE);
}

/**
 * Errors Fastify raises itself, in the service's words: Fastify's own messages quote the path,
 * the parameter or the body, and partners would come to parse its FST_ codes.
 */
const FRAMEWORK_ERRORS: Record<string, { code: ErrorCode; message: string }> = {
  FST_ERR_CTP_INVALID_JSON_BODY: { code: 'invalid_request', message: 'body must be valid JSON' },
  FST_ERR_CTP_EMPTY_JSON_BODY: { code: 'invalid_request', message: 'body must be valid JSON' },
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: { code: 'invalid_request', message: 'Content-Length does not match the body' },
  FST_ERR_BAD_URL: { code: 'invalid_request', message: 'URL must be validly percent-encoded' },
  FST_ERR_MAX_PARAM_LENGTH: { code: 'uri_too_long', message: 'A path segment is too long' },
  FST_ERR_CTP_BODY_TOO_LARGE: { code: 'payload_too_large', message: 'Request body is too large' },
  FST_ERR_CTP_INVALID_MEDIA_TYPE: { code: 'unsupported_media_type', message: 'Content-Type must be application/json' },
  FST_ERR_NOT_FOUND: { code: 'not_found', message: ROUTE_NOT_FOUND },
};

/** The code of any other client error by its status; one the list has no code for is a malformed request. */
const CLIENT_CODE_OF: Partial<Record<number, ErrorCode>> = {
  401: 'unauthenticated',
  403: 'forbidden',
  404: 'not_found',
  408: 'request_timeout',
  409: 'conflict',
  413: 'payload_too_large',
  414: 'uri_too_long',
  415: 'unsupported_media_type',
  421: 'misdirected_request',
  429: 'rate_limited',
  431: 'headers_too_large',
};

/** For any other client error whose message is not ours: it may quote the input. */
const genericClientMessage = (code: ErrorCode) => (code === 'invalid_request' ? 'request is invalid' : (STATUS_CODES[STATUS_OF[code]] ?? 'Client error'));

function handleError(err: FastifyError, request: FastifyRequest, reply: FastifyReply) {
  if (err.validation) {
    const context = err.validationContext ?? 'body';
    return sendBadRequest(reply, validationViolations(err.validation as ErrorObject[], context));
  }
  if (err instanceof InvalidRequestError) return sendBadRequest(reply, err.errors);
  if (err instanceof PaymentRejectedError) {
    return reply.code(STATUS_OF[err.code]).send({ success: false, refNum: err.refNum, message: err.message, code: err.refusal, requestId: request.id });
  }
  if (err instanceof UpstreamUnavailableError) {
    request.log.warn({ err: redactDbError(err), detail: err.detail }, 'upstream unavailable');
    return sendError(reply, err.code, err.message);
  }
  if (err instanceof CaseAlreadyOpenError) return reply.code(STATUS_OF[err.code]).send({ ...errorBody(err.code, err.message, request.id), caseId: err.caseId });
  if (err instanceof DomainError) return sendError(reply, err.code, err.message);
  if (isDatabaseUnavailable(err)) return sendDatabaseUnavailable(err, request, reply);
  const known = typeof err.code === 'string' ? FRAMEWORK_ERRORS[err.code] : undefined;
  if (known) return sendError(reply, known.code, known.message);
  if (err.statusCode && err.statusCode >= 400 && err.statusCode < 500) {
    const code = CLIENT_CODE_OF[err.statusCode] ?? 'invalid_request';
    return sendError(reply, code, genericClientMessage(code));
  }
  request.log.error({ err: redactDbError(err) }, 'unhandled error');
  return sendError(reply, 'internal_error', 'Internal server error');
}

/**
 * Fastify's `frameworkErrors` option: bad percent-encoding and over-long path parameters are
 * refused before routing, so no hook has run and the request id header is set here.
 */
export function frameworkErrors(err: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  reply.header('x-request-id', request.id);
  void handleError(err, request, reply);
}

export function registerErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler(handleError);
  app.setNotFoundHandler((_request, reply) => {
    void sendError(reply, 'not_found', ROUTE_NOT_FOUND);
  });
}
