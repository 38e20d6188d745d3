/**
 * W3C trace context (https://www.w3.org/TR/trace-context/), version 00 only: anything else a
 * partner sends starts a new trace rather than being half-understood.
 */
export interface TraceContext {
  /** 32 lowercase hex digits, never all zero. */
  readonly traceId: string;
  /** 16 lowercase hex digits, never all zero: the span this context names. */
  readonly spanId: string;
  /** 2 lowercase hex digits; bit 0 says the trace is sampled. */
  readonly flags: string;
  /** The vendors' `tracestate` list, carried along unchanged; absent when none came with the parent. */
  readonly state?: string;
}

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;
const ZERO_TRACE_ID = '0'.repeat(32);
const ZERO_SPAN_ID = '0'.repeat(16);
/** At most 32 list members of printable ASCII (the specification's bound is 512 characters to propagate). */
const TRACESTATE = /^[\x20-\x7e]{1,512}$/;

export function isValidTraceId(id: string): boolean {
  return id !== ZERO_TRACE_ID;
}

export function isValidSpanId(id: string): boolean {
  return id !== ZERO_SPAN_ID;
}

/** A `traceparent` header's context, or null for anything not a valid version-00 header. */
export function parseTraceparent(header: unknown, tracestate?: unknown): TraceContext | null {
  if (typeof header !== 'string' || header.length !== 55) return null;
  const match = TRACEPARENT.exec(header);
  if (!match) return null;
  const [, traceId = '', spanId = '', flags = ''] = match;
  if (!isValidTraceId(traceId) || !isValidSpanId(spanId)) return null;
  const state = typeof tracestate === 'string' && TRACESTATE.test(tracestate) ? tracestate : undefined;
  return state === undefined ? { traceId, spanId, flags } : { traceId, spanId, flags, state };
}

export function formatTraceparent(context: TraceContext): string {
  return `00-${context.traceId}-${context.spanId}-${context.flags}`;
}

export function isSampled(context: TraceContext): boolean {
  return (Number.parseInt(context.flags, 16) & 1) === 1;
}

/** The headers that carry a context to the next service. */
export interface TraceHeaders {
  traceparent: string;
  tracestate?: string;
}

export function traceHeaders(context: TraceContext): TraceHeaders {
  const traceparent = formatTraceparent(context);
  return context.state === undefined ? { traceparent } : { traceparent, tracestate: context.state };
}

/** The OpenTelemetry sampler names OTEL_TRACES_SAMPLER accepts. */
export const TRACE_SAMPLERS = ['always_on', 'always_off', 'traceidratio', 'parentbased_always_on', 'parentbased_always_off', 'parentbased_traceidratio'] as const;
export type TraceSampler = (typeof TRACE_SAMPLERS)[number];
