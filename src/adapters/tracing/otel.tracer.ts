import { context, createTraceState, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Context, type Link, type Span, type SpanContext } from '@opentelemetry/api';
import { parseTraceparent, traceHeaders, type TraceContext } from '../../domain/trace-context.js';
import type { RequestSpan, SpanKindName, Tracer } from '../../domain/tracer.port.js';
import { createTraceIds } from './trace-ids.js';

const KINDS: Record<SpanKindName, SpanKind> = {
  internal: SpanKind.INTERNAL,
  client: SpanKind.CLIENT,
  server: SpanKind.SERVER,
  producer: SpanKind.PRODUCER,
  consumer: SpanKind.CONSUMER,
};

function contextOf(span: SpanContext): TraceContext {
  const flags = span.traceFlags.toString(16).padStart(2, '0');
  const state = span.traceState?.serialize();
  return state ? { traceId: span.traceId, spanId: span.spanId, flags, state } : { traceId: span.traceId, spanId: span.spanId, flags };
}

/** A stored or received context as the remote parent of the spans started under it. */
function parentContext(parent: TraceContext | null): Context {
  if (!parent) return ROOT_CONTEXT;
  return trace.setSpanContext(ROOT_CONTEXT, {
    traceId: parent.traceId,
    spanId: parent.spanId,
    traceFlags: Number.parseInt(parent.flags, 16),
    isRemote: true,
    ...(parent.state === undefined ? {} : { traceState: createTraceState(parent.state) }),
  });
}

function failed(span: Span, error: unknown): void {
  // The error's kind only: messages can quote what a partner or a ministry sent.
  span.setStatus({ code: SpanStatusCode.ERROR, message: error instanceof Error ? error.name : 'error' });
}

/** Spans as OpenTelemetry spans, through the global tracer provider that otel.setup.ts registers. */
export function createOtelTracer(instrumentationName: string): Tracer {
  const tracer = trace.getTracer(instrumentationName);
  const ids = createTraceIds();

  return {
    exports: true,
    active() {
      const span = trace.getActiveSpan();
      return span ? contextOf(span.spanContext()) : null;
    },
    span(name, options, fn) {
      let parent: Context = context.active();
      const links: Link[] = [];
      if ('parent' in options) {
        const current = trace.getActiveSpan();
        if (current) links.push({ context: current.spanContext() });
        parent = parentContext(options.parent ?? null);
      }
      const spanOptions = { kind: KINDS[options.kind ?? 'internal'], attributes: options.attributes, links };
      return tracer.startActiveSpan(name, spanOptions, parent, async (span) => {
        try {
          return await fn();
        } catch (error) {
          failed(span, error);
          throw error;
        } finally {
          span.end();
        }
      });
    },
    annotate(attributes) {
      trace.getActiveSpan()?.setAttributes(attributes);
    },
    outgoing() {
      const span = trace.getActiveSpan();
      return traceHeaders(span ? contextOf(span.spanContext()) : { traceId: ids.traceId(), spanId: ids.spanId(), flags: '00' });
    },
    startRequest(traceparent, tracestate): RequestSpan {
      const parent = parentContext(parseTraceparent(traceparent, tracestate));
      const span = tracer.startSpan('HTTP request', { kind: SpanKind.SERVER }, parent);
      return { ...contextOf(span.spanContext()), handle: span };
    },
    enterRequest(request, fn) {
      context.with(trace.setSpan(ROOT_CONTEXT, request.handle as Span), fn);
    },
    endRequest(request, { method, route, statusCode, attributes }) {
      const span = request.handle as Span;
      span.updateName(route === undefined ? method : `${method} ${route}`);
      span.setAttributes({ 'http.request.method': method, 'http.response.status_code': statusCode, ...(route === undefined ? {} : { 'http.route': route }) });
      if (attributes) span.setAttributes(attributes);
      if (statusCode >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
      span.end();
    },
  };
}
