import type { TraceHeaders } from '../../domain/trace-context.js';
import type { MinistryAdapter } from '../../domain/ministry.port.js';

export interface AdapterOptions {
  /** Root of the ministry system; each adapter appends its own path prefix. */
  baseUrl: string;
  /** Overall limit for one call, connect to last body byte. */
  timeoutMs: number;
  /** Keep-alive connections to the system. */
  connections?: number;
  /** The trace context each call carries. */
  traceHeaders?: () => TraceHeaders;
  /** The most bytes of one answer read (settlements have their own larger bound); past it the answer is malformed. */
  maxResponseBytes?: number;
}

/** An adapter that owns a connection pool, which close() releases. */
export type ClosableMinistryAdapter = MinistryAdapter & { close(): Promise<void> };
