import { randomUUID } from 'node:crypto';
import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { badRequestBody, errorBody } from './plugins/errors.plugin.js';

type ClientError = Error & { code?: string };

function bodyFor(code: string | undefined, requestId: string): { status: number; body: object } {
  if (code === 'HPE_HEADER_OVERFLOW') return { status: 431, body: errorBody('headers_too_large', 'Request headers are too large', requestId) };
  if (code === 'ERR_HTTP_REQUEST_TIMEOUT') return { status: 408, body: errorBody('request_timeout', 'Request was not received in time', requestId) };
  return { status: 400, body: badRequestBody([{ path: '', message: 'request is not valid HTTP' }], requestId) };
}

/**
 * Fastify's `clientErrorHandler`: Node's parser refuses these requests (headers too large,
 * malformed HTTP, timeouts) before Fastify builds a request, so no hook or error handler runs and
 * the answer is written to the socket here, in the service's error shape. The request's own
 * X-Request-Id cannot be read from headers that failed to parse, so one is minted: the header and
 * the body's `requestId` carry it.
 */
export function clientErrorHandler(this: FastifyInstance, err: ClientError, socket: Socket): void {
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  // Only the code: the error holds the raw bytes received, API key header included.
  this.log.debug({ code: err.code }, 'client error');
  if (!socket.writable) {
    socket.destroy();
    return;
  }
  const requestId = randomUUID();
  const { status, body } = bodyFor(err.code, requestId);
  const json = JSON.stringify(body);
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? 'Error'}\r\n` +
      'Connection: close\r\n' +
      'Content-Type: application/json; charset=utf-8\r\n' +
      `Content-Length: ${Buffer.byteLength(json)}\r\n` +
      `X-Request-Id: ${requestId}\r\n\r\n${json}`,
    // The parser cannot read anything more from this connection.
    () => socket.destroy(),
  );
}
