import type { FastifyInstance } from 'fastify';
import type { Tracer } from '../../domain/tracer.port.js';
import { requestSpanOf } from '../request-logger.js';

/**
 * Runs each request inside the span its logger factory started (requestSpanLoggerFactory), so
 * what it calls (ministries, the database) joins the trace; with an exporter, ends the span named
 * by its route template. A callback hook: it never waits, and every request runs it.
 */
export function registerTracing(app: FastifyInstance, tracer: Tracer): void {
  app.addHook('onRequest', (request, _reply, done) => {
    const span = requestSpanOf(request.raw) ?? tracer.startRequest(request.headers.traceparent, request.headers.tracestate);
    tracer.enterRequest(span, done);
  });
  if (!tracer.exports) return;
  app.addHook('onResponse', (request, reply, done) => {
    const span = requestSpanOf(request.raw);
    // Set by the auth plugin on the routes that take a key.
    const partner = (request as { partner?: { id?: unknown } | null }).partner;
    const attributes = typeof partner?.id === 'string' ? { 'partner.id': partner.id } : undefined;
    if (span) tracer.endRequest(span, { method: request.method, route: request.routeOptions.url, statusCode: reply.statusCode, attributes });
    done();
  });
}
