import type { FastifyBaseLogger, FastifyServerOptions } from 'fastify';
import type { IncomingMessage } from 'node:http';
import type { RequestSpan, Tracer } from '../domain/tracer.port.js';

type Level = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace';
type Bindings = Record<string, unknown>;
const LEVELS: Level[] = ['fatal', 'error', 'warn', 'info', 'debug', 'trace'];

function enabledAt(threshold: string): ReadonlySet<string> {
  const index = LEVELS.indexOf(threshold as Level);
  return new Set(index < 0 ? [] : LEVELS.slice(0, index + 1));
}
const ENABLED = new Map(['silent', ...LEVELS].map((l) => [l, enabledAt(l)]));

/**
 * A request's logger that becomes a real pino child, with exactly the bindings and options Fastify
 * asked for, the first time something is logged at an enabled level. A pino child costs a few
 * microseconds (its bindings are serialized and redacted), a measurable share of a cached read,
 * while most requests log nothing at the configured level.
 */
class LazyChildLogger {
  private real: FastifyBaseLogger | null = null;
  private readonly enabled: ReadonlySet<string>;

  constructor(
    private readonly parent: FastifyBaseLogger,
    private readonly bindings: Bindings,
    private readonly opts: { level?: string },
    private readonly span?: RequestSpan,
  ) {
    this.enabled = ENABLED.get(opts.level ?? parent.level) ?? ENABLED.get('trace') ?? new Set();
  }

  private materialize(): FastifyBaseLogger {
    // The trace ids join the bindings only here: a request that logs nothing never copies them.
    this.real ??= this.parent.child(this.span ? { ...this.bindings, traceId: this.span.traceId, spanId: this.span.spanId } : this.bindings, this.opts);
    return this.real;
  }

  write(level: Level, args: unknown[]): void {
    if (this.real || this.enabled.has(level)) (this.materialize()[level] as (...a: unknown[]) => void)(...args);
  }

  get level(): string {
    return this.real?.level ?? this.opts.level ?? this.parent.level;
  }

  set level(value: string) {
    this.materialize().level = value;
  }

  silent() {}
  child(bindings: Bindings, opts?: object): FastifyBaseLogger {
    return this.materialize().child(bindings, opts);
  }
}

// The level methods, one per level, on the prototype so a request's logger allocates none.
for (const level of LEVELS) {
  Object.defineProperty(LazyChildLogger.prototype, level, {
    value(this: LazyChildLogger, ...args: unknown[]) {
      this.write(level, args);
    },
  });
}

export const lazyChildLoggerFactory: NonNullable<FastifyServerOptions['childLoggerFactory']> = (parent, bindings, opts) =>
  new LazyChildLogger(parent, bindings, opts) as unknown as FastifyBaseLogger;

const kRequestSpan = Symbol('requestSpan');
type TracedMessage = IncomingMessage & { [kRequestSpan]?: RequestSpan };

/** The span requestSpanLoggerFactory started for this request, if it did. */
export function requestSpanOf(raw: IncomingMessage): RequestSpan | undefined {
  return (raw as TracedMessage)[kRequestSpan];
}

/**
 * The lazy child logger, with the request's span started as the request arrives: Fastify makes a
 * request's logger before anything else of it (and logs "incoming request" before the first
 * hook), so the span starts here and every line of the request names its trace and span.
 */
export function requestSpanLoggerFactory(tracer: Tracer): NonNullable<FastifyServerOptions['childLoggerFactory']> {
  return (parent, bindings, opts, raw) => {
    const span = tracer.startRequest(raw.headers.traceparent, raw.headers.tracestate);
    (raw as TracedMessage)[kRequestSpan] = span;
    return new LazyChildLogger(parent, bindings, opts, span) as unknown as FastifyBaseLogger;
  };
}
