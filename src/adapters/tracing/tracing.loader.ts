import type { Tracer } from '../../domain/tracer.port.js';
import { createLocalTracer } from './local.tracer.js';
import type { OtelSettings } from './otel.setup.js';

export interface Tracing {
  tracer: Tracer;
  shutdown(): Promise<void>;
}

/**
 * The process's tracer: without a collector endpoint, the local one (contexts only, and no
 * OpenTelemetry module is ever imported); with one, the OpenTelemetry SDK, imported here and
 * only here. Call it before anything imports pg or ioredis.
 */
export async function startTracing(settings: Omit<OtelSettings, 'endpoint'> & { endpoint: string | null }): Promise<Tracing> {
  const { endpoint } = settings;
  if (endpoint === null) return { tracer: createLocalTracer(), shutdown: () => Promise.resolve() };
  const { startOtel } = await import('./otel.setup.js');
  return startOtel({ ...settings, endpoint });
}
