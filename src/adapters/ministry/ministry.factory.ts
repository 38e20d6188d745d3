import type { TraceHeaders } from '../../domain/trace-context.js';
import type { AdapterOptions, ClosableMinistryAdapter } from './adapter-options.types.js';
import { createEtaxAdapter } from './etax.adapter.js';
import type { MinistryAdapters } from '../../domain/ministry.port.js';
import type { Source } from '../../domain/vocabulary.js';
import { createMofAdapter } from './mof.adapter.js';
import { createPoliceAdapter } from './police.adapter.js';

export interface MinistryAdaptersOptions {
  /** Root URL of each ministry system (the simulator root serves all three). */
  urls: Record<Source, string>;
  timeoutMs: number;
  /** Keep-alive connections per system: enough for the background checks at their cap and the partners' requests beside them. */
  connections?: number;
  /** The trace context each call carries. */
  traceHeaders?: () => TraceHeaders;
  /** The most bytes of one answer read (MINISTRY_MAX_RESPONSE_BYTES). */
  maxResponseBytes?: number;
}

export type ClosableMinistryAdapters = MinistryAdapters & {
  /** Closes every adapter's connection pool. */
  close(): Promise<void>;
};

const FACTORIES: Record<Source, (opts: AdapterOptions) => ClosableMinistryAdapter> = {
  mof: createMofAdapter,
  etax: createEtaxAdapter,
  police: createPoliceAdapter,
};

export function createMinistryAdapters(opts: MinistryAdaptersOptions): ClosableMinistryAdapters {
  const build = (source: Source) =>
    FACTORIES[source]({ baseUrl: opts.urls[source], timeoutMs: opts.timeoutMs, connections: opts.connections, traceHeaders: opts.traceHeaders, maxResponseBytes: opts.maxResponseBytes });
  const mof = build('mof');
  const etax = build('etax');
  const police = build('police');
  return {
    mof,
    etax,
    police,
    close: async () => {
      await Promise.all([mof.close(), etax.close(), police.close()]);
    },
  };
}
