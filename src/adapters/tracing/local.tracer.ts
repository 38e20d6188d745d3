import { parseTraceparent, traceHeaders, type TraceContext } from '../../domain/trace-context.js';
import type { RequestSpan, Tracer } from '../../domain/tracer.port.js';
import { createTraceIds } from './trace-ids.js';
import { createAsyncContext, type AsyncSlot } from '../../primitives/async-context.js';

/** A trace this service starts without an exporter is not sampled: nothing of it is recorded here. */
const NOT_SAMPLED = '00';

/**
 * Trace contexts without an exporter: each span is a context (new span id, its parent's trace)
 * kept in the async context, so log lines, ministry calls and webhook deliveries carry the trace;
 * nothing is recorded. `store` is the slot of the process's async context the contexts are kept in.
 */
export function createLocalTracer(store: AsyncSlot<TraceContext> = createAsyncContext().slot()): Tracer {
  const ids = createTraceIds();

  const childOf = (parent: TraceContext | null | undefined): TraceContext =>
    parent
      ? { traceId: parent.traceId, spanId: ids.spanId(), flags: parent.flags, ...(parent.state === undefined ? {} : { state: parent.state }) }
      : { traceId: ids.traceId(), spanId: ids.spanId(), flags: NOT_SAMPLED };

  return {
    exports: false,
    active: () => store.get() ?? null,
    span(_name, options, fn) {
      const parent = 'parent' in options ? options.parent : store.get();
      return store.run(childOf(parent), fn);
    },
    annotate() {},
    outgoing() {
      return traceHeaders(store.get() ?? childOf(null));
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
