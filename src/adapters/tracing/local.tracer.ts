import { AsyncLocalStorage } from 'node:async_hooks';
import { parseTraceparent, traceHeaders, type TraceContext } from '../../domain/trace-context.js';
import type { RequestSpan, Tracer } from '../../domain/tracer.port.js';
import { createTraceIds } from './trace-ids.js';

/** A trace this service starts without an exporter is not sampled: nothing of it is recorded here. */
const NOT_SAMPLED = '00';

/**
 * Trace contexts without an exporter: each span is a context (new span id, its parent's trace)
 * kept in the async context, so log lines, ministry calls and webhook deliveries carry the trace;
 * nothing is recorded.
 */
export function createLocalTracer(): Tracer {
  const store = new AsyncLocalStorage<TraceContext>();
  const ids = createTraceIds();

  const childOf = (parent: TraceContext | null | undefined): TraceContext =>
    parent
      ? { traceId: parent.traceId, spanId: ids.spanId(), flags: parent.flags, ...(parent.state === undefined ? {} : { state: parent.state }) }
      : { traceId: ids.traceId(), spanId: ids.spanId(), flags: NOT_SAMPLED };

  return {
    exports: false,
    active: () => store.getStore() ?? null,
    span(_name, options, fn) {
      const parent = 'parent' in options ? options.parent : store.getStore();
      return store.run(childOf(parent), fn);
    },
    annotate() {},
    outgoing() {
      return traceHeaders(store.getStore() ?? childOf(null));
    },
    startRequest(traceparent, tracestate): RequestSpan {
      return childOf(parseTraceparent(traceparent, tracestate));
    },
    enterRequest(span, fn) {
      store.run(span, fn);
    },
    endRequest() {},
  };
}
