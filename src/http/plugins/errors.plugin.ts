import { STATUS_CODES } from 'node:http';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ErrorObject } from 'ajv';
import { AppError, BadRequestError, PaymentRejectedError, UpstreamUnavailableError } from '../../domain/errors.js';
import { describeValidation } from '../validation.js';

export function errorBody(statusCode: number, message: string) {
  return { statusCode, message, error: STATUS_CODES[statusCode] ?? 'Error' };
}

export function badRequestBody(messages: string[]) {
  return { statusCode: 400 as const, message: messages, error: 'Bad Request' as const };
}

function sendBadRequest(reply: FastifyReply, messages: string[]) {
  return reply.code(400).type('application/json').send(badRequestBody(messages));
}

function fastifyErrorMessages(err: FastifyError): string[] | null {
  switch (err.code) {
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return ['body must be valid JSON'];
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return ['Content-Length does not match the body'];
    default:
      return null;
  }
}

function handleError(err: FastifyError, request: FastifyRequest, reply: FastifyReply) {
  if (err.validation) {
    return sendBadRequest(reply, describeValidation(err.validation as ErrorObject[], err.validationContext ?? 'body'));
  }
  if (err instanceof BadRequestError) return sendBadRequest(reply, err.violations);
  if (err instanceof PaymentRejectedError) {
    return reply.code(422).send({ success: false, refNum: err.refNum, message: err.message });
  }
  if (err instanceof UpstreamUnavailableError) {
    request.log.warn({ err, detail: err.detail }, 'upstream unavailable');
    return reply.code(503).send(errorBody(503, err.message));
  }
  if (err instanceof AppError) return reply.code(err.statusCode).send(errorBody(err.statusCode, err.message));
  const parseMessages = fastifyErrorMessages(err);
  if (parseMessages) return sendBadRequest(reply, parseMessages);
  if (err.code === 'FST_ERR_CTP_BODY_TOO_LARGE') {
    return reply.code(413).send(errorBody(413, 'Request body is too large'));
  }
  if (err.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') {
    return reply.code(415).send(errorBody(415, 'Content-Type must be application/json'));
  }
  const status = err.statusCode && err.statusCode >= 400 && err.statusCode < 500 ? err.statusCode : 500;
  if (status === 400) return sendBadRequest(reply, [err.message]);
  if (status < 500) return reply.code(status).send(errorBody(status, err.message));
  request.log.error({ err }, 'unhandled error');
  return reply.code(500).send(errorBody(500, 'Internal server error'));
}

export function registerErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler(handleError);
  app.setNotFoundHandler((request, reply) => {
    reply.code(404).send(errorBody(404, `Route ${request.method} ${request.url.split('?')[0]} not found`));
  });
}
