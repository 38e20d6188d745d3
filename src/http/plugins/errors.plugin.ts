import { STATUS_CODES } from 'node:http';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ErrorObject } from 'ajv';
import { DomainError, InvalidRequestError, PaymentRejectedError, UpstreamUnavailableError, type ErrorCode } from '../../domain/errors.js';
import { describeValidation } from '../validation.js';
import { redactDbError } from '../db-error.redactor.js';
import { isDatabaseUnavailable } from '../../db/pg-error.js';

export function errorBody(statusCode: number, message: string) {
  return { statusCode, message, error: STATUS_CODES[statusCode] ?? 'Error' };
}

export function badRequestBody(messages: string[]) {
  return { statusCode: 400 as const, message: messages, error: 'Bad Request' as const };
}

function sendBadRequest(reply: FastifyReply, messages: string[]) {
  return reply.code(400).type('application/json').send(badRequestBody(messages));
}

function sendError(reply: FastifyReply, status: number, message: string) {
  if (status === 400) return sendBadRequest(reply, [message]);
  return reply.code(status).send(errorBody(status, message));
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
  return reply.code(503).header('retry-after', String(DATABASE_RETRY_AFTER_SECONDS)).send(errorBody(503, DATABASE_UNAVAILABLE));
}

/** The one place a domain error code becomes an HTTP status. */
const STATUS_OF: Record<ErrorCode, number> = {
  invalid_request: 400,
  unauthenticated: 401,
  forbidden: 403,
  not_found: 404,
  conflict: 409,
  illegal_transition: 409,
  unprocessable: 422,
  payment_rejected: 422,
  upstream_unavailable: 503,
};

/**
 * Errors Fastify raises itself, in the service's words: Fastify's own messages quote the path,
 * the parameter or the body, and partners would come to parse its FST_ codes.
 */
const FRAMEWORK_ERRORS: Record<string, { status: number; message: string }> = {
  FST_ERR_CTP_INVALID_JSON_BODY: { status: 400, message: 'body must be valid JSON' },
  FST_ERR_CTP_EMPTY_JSON_BODY: { status: 400, message: 'body must be valid JSON' },
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: { status: 400, message: 'Content-Length does not match the body' },
  FST_ERR_BAD_URL: { status: 400, message: 'URL must be validly percent-encoded' },
  FST_ERR_MAX_PARAM_LENGTH: { status: 414, message: 'A path segment is too long' },
  FST_ERR_CTP_BODY_TOO_LARGE: { status: 413, message: 'Request body is too large' },
  FST_ERR_CTP_INVALID_MEDIA_TYPE: { status: 415, message: 'Content-Type must be application/json' },
  FST_ERR_NOT_FOUND: { status: 404, message: ROUTE_NOT_FOUND },
};

/** For any other client error whose message is not ours: it may quote the input. */
const genericClientMessage = (status: number) => (status === 400 ? 'request is invalid' : (STATUS_CODES[status] ?? 'Client error'));

function handleError(err: FastifyError, request: FastifyRequest, reply: FastifyReply) {
  if (err.validation) {
    return sendBadRequest(reply, describeValidation(err.validation as ErrorObject[], err.validationContext ?? 'body'));
  }
  if (err instanceof InvalidRequestError) return sendBadRequest(reply, err.violations);
  if (err instanceof PaymentRejectedError) {
    return reply.code(422).send({ success: false, refNum: err.refNum, message: err.message });
  }
  if (err instanceof UpstreamUnavailableError) {
    request.log.warn({ err: redactDbError(err), detail: err.detail }, 'upstream unavailable');
    return reply.code(503).send(errorBody(503, err.message));
  }
  if (err instanceof DomainError) return reply.code(STATUS_OF[err.code]).send(errorBody(STATUS_OF[err.code], err.message));
  if (isDatabaseUnavailable(err)) return sendDatabaseUnavailable(err, request, reply);
  const known = typeof err.code === 'string' ? FRAMEWORK_ERRORS[err.code] : undefined;
  if (known) return sendError(reply, known.status, known.message);
  const status = err.statusCode && err.statusCode >= 400 && err.statusCode < 500 ? err.statusCode : 500;
  if (status < 500) return sendError(reply, status, genericClientMessage(status));
  request.log.error({ err: redactDbError(err) }, 'unhandled error');
  return reply.code(500).send(errorBody(500, 'Internal server error'));
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
    reply.code(404).send(errorBody(404, ROUTE_NOT_FOUND));
  });
}
