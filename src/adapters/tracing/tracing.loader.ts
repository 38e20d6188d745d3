import type { Tracer } from '../../domain/tracer.port.js';
import { createLocalTracer } from './local.tracer.js';
import type { OtelSettings } from './otel.setup.js';
import { createAsyncContext, type AsyncContext } from '../../primitives/async-context.js';

export interface Tracing {
  tracer: Tracer;
  /**
   * The process's one async context, for every value that follows a request or a job pass: the
   * local tracer keeps its trace contexts in it, and so does OpenTelemetry's context manager.
   */
  asyncContext: AsyncContext;
  shutdown(): Promise<void>;
}

/**
 * The process's tracer: without a collector endpoint, the local one (contexts only, and no
 * OpenTelemetry module is ever imported); with one, the OpenTelemetry SDK, imported here and
 * only here. Call it before anything imports pg or ioredis.
 */
export async function startTracing(settings: Omit<OtelSettings, 'endpoint'> & { endpoint: string | null }): Promise<Tracing> {
  const { endpoint } = settings;
  const asyncContext = createAsyncContext();
  if (endpoint === null) return { tracer: createLocalTracer(asyncContext.slot()), asyncContext, shutdown: () => Promise.resolve() };
  const { startOtel } = await import('./otel.setup.js');
  return { ...(await startOtel({ ...settings, endpoint }, asyncContext.slot())), asyncContext };
}
