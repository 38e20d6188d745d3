import type { TraceContext, TraceHeaders } from './trace-context.js';

export type SpanAttributes = Record<string, string | number | boolean>;
export type SpanKindName = 'internal' | 'client' | 'server' | 'producer' | 'consumer';

export interface SpanOptions {
  kind?: SpanKindName;
  attributes?: SpanAttributes;
  /**
   * Background work for a payment: the span's parent is the context stored with the payment (a
   * fresh trace when null), and the span links the span active at the call, if any (the pass's).
   * Left out, the span is a child of the active span.
   */
  parent?: TraceContext | null;
}

/** A partner request's span: its context, and whatever the tracer keeps to end it. */
export interface RequestSpan extends TraceContext {
  readonly handle?: unknown;
}

/**
 * Spans, as the services, jobs and adapters see them. Without an exporter only the contexts
 * exist (ids kept in the async context, nothing recorded); with one they are OpenTelemetry spans.
 */
export interface Tracer {
  /** Whether spans are recorded and exported (not just their contexts kept). */
  readonly exports: boolean;
  /** The active span's context, or null outside any. */
  active(): TraceContext | null;
  span<T>(name: string, options: SpanOptions, fn: () => Promise<T>): Promise<T>;
  /** Adds attributes to the active span (when recorded). */
  annotate(attributes: SpanAttributes): void;
  /** What an outbound call made now carries: the active span's context, or a fresh trace's. */
  outgoing(): TraceHeaders;
  /** A request's span: a child of the partner's `traceparent` when that is valid, else a new trace's root. */
  startRequest(traceparent: unknown, tracestate: unknown): RequestSpan;
  /** Runs `fn` (and all it starts) with the request's span active. */
  enterRequest(span: RequestSpan, fn: () => void): void;
  /** Names the span after its route template (never the path with its ids) and ends it. */
  endRequest(span: RequestSpan, end: { method: string; route: string | undefined; statusCode: number; attributes?: SpanAttributes }): void;
}
