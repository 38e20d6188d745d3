import { register } from 'node:module';
import type { Attributes, Context } from '@opentelemetry/api';
import type { ReadableSpan, Sampler, SpanExporter } from '@opentelemetry/sdk-trace-node';
import type { TraceSampler } from '../../domain/trace-context.js';
import type { Tracer } from '../../domain/tracer.port.js';
import type { AsyncSlot } from '../../primitives/async-context.js';

export interface OtelSettings {
  /** The collector's OTLP/HTTP base URL; spans go to `<endpoint>/v1/traces`. */
  endpoint: string;
  serviceName: string;
  sampler: TraceSampler;
  /** The ratio of the ratio samplers (0 to 1). */
  samplerArg: number;
  /** How long finished spans wait to be sent in one batch. */
  scheduleDelayMs: number;
}

export interface OtelTracing {
  tracer: Tracer;
  /** Sends the spans still waiting, then stops the exporter. */
  shutdown(): Promise<void>;
}

/**
 * Attributes the instrumentations record that can carry ids, query strings or tokens: an
 * outbound URL in full, its path and query, an inbound path. The route template and the server
 * address say where a call went without them.
 */
const DROPPED = new Set(['url.full', 'url.path', 'url.query', 'http.url', 'http.target', 'db.connection_string', 'user_agent.original']);

function redacted(attributes: Attributes): Attributes {
  if (!Object.keys(attributes).some((key) => DROPPED.has(key))) return attributes;
  return Object.fromEntries(Object.entries(attributes).filter(([key]) => !DROPPED.has(key)));
}

/** The exporter, sending each span with its redacted attributes; what it sends is the only copy that leaves the process. */
function redacting(inner: SpanExporter): SpanExporter {
  const redact = (span: ReadableSpan): ReadableSpan => {
    const attributes = redacted(span.attributes);
    return attributes === span.attributes ? span : (Object.create(span, { attributes: { value: attributes } }) as ReadableSpan);
  };
  return {
    export: (spans, done) => inner.export(spans.map(redact), done),
    shutdown: () => inner.shutdown(),
    forceFlush: () => inner.forceFlush?.() ?? Promise.resolve(),
  };
}

async function samplerFor(settings: OtelSettings): Promise<Sampler> {
  const { AlwaysOffSampler, AlwaysOnSampler, ParentBasedSampler, TraceIdRatioBasedSampler } = await import('@opentelemetry/sdk-trace-node');
  const roots: Record<string, () => Sampler> = {
    always_on: () => new AlwaysOnSampler(),
    always_off: () => new AlwaysOffSampler(),
    traceidratio: () => new TraceIdRatioBasedSampler(settings.samplerArg),
  };
  const [, parentBased, rootName = settings.sampler] = /^(parentbased_)?(.*)$/.exec(settings.sampler) ?? [];
  const make = roots[rootName];
  const root = make ? make() : new AlwaysOnSampler();
  return parentBased ? new ParentBasedSampler({ root }) : root;
}

/** Whether an outbound undici request already carries the trace context this service put on it. */
function carriesTraceparent(headers: string | (string | string[])[]): boolean {
  return typeof headers === 'string' ? /(^|\r\n)traceparent:/i.test(headers) : headers.some((h) => typeof h === 'string' && h.toLowerCase() === 'traceparent');
}

async function startInstrumentations(): Promise<void> {
  const [{ registerInstrumentations }, { PgInstrumentation }, { IORedisInstrumentation }, { UndiciInstrumentation }] = await Promise.all([
    import('@opentelemetry/instrumentation'),
    import('@opentelemetry/instrumentation-pg'),
    import('@opentelemetry/instrumentation-ioredis'),
    import('@opentelemetry/instrumentation-undici'),
  ]);
  registerInstrumentations({
    instrumentations: [
      // Statements with their placeholders, never the values bound to them; no span outside a trace (the passes' claims).
      new PgInstrumentation({ requireParentSpan: true, enhancedDatabaseReporting: false }),
      // The command alone: keys name partners and client addresses.
      new IORedisInstrumentation({ requireParentSpan: true, dbStatementSerializer: (command) => command }),
      // Ministry calls and webhook deliveries have spans of their own and carry their traceparent already.
      new UndiciInstrumentation({ requireParentforSpans: true, ignoreRequestHook: (request) => carriesTraceparent(request.headers) }),
    ],
  });
}

/**
 * Starts the OpenTelemetry SDK: the loader hook that lets the instrumentations patch pg and
 * ioredis when they are imported as ES modules, the instrumentations, and the tracer provider
 * exporting over OTLP/HTTP, its active context kept in `slot` of the process's async context.
 * Must run before the modules it instruments are first imported.
 */
export async function startOtel(settings: OtelSettings, slot: AsyncSlot<Context>): Promise<OtelTracing> {
  register('@opentelemetry/instrumentation/hook.mjs', import.meta.url, { data: { include: ['pg', 'pg-pool', 'ioredis'] } });
  const [{ NodeTracerProvider, BatchSpanProcessor }, { OTLPTraceExporter }, { resourceFromAttributes }, { ATTR_SERVICE_NAME }, { createOtelTracer }, { SlotContextManager }] = await Promise.all([
    import('@opentelemetry/sdk-trace-node'),
    import('@opentelemetry/exporter-trace-otlp-http'),
    import('@opentelemetry/resources'),
    import('@opentelemetry/semantic-conventions'),
    import('./otel.tracer.js'),
    import('./otel.context-manager.js'),
  ]);
  const exporter = redacting(new OTLPTraceExporter({ url: `${settings.endpoint.replace(/\/+$/, '')}/v1/traces` }));
  const provider = new NodeTracerProvider({
    resource: resourceFromAttributes({ [ATTR_SERVICE_NAME]: settings.serviceName }),
    sampler: await samplerFor(settings),
    spanProcessors: [new BatchSpanProcessor(exporter, { scheduledDelayMillis: settings.scheduleDelayMs })],
  });
  provider.register({ contextManager: new SlotContextManager(slot) });
  await startInstrumentations();
  return { tracer: createOtelTracer(settings.serviceName), shutdown: () => provider.shutdown() };
}
