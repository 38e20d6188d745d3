import type { Metrics } from '../services/metrics.js';
import { UpstreamError, type MinistryAdapter, type MinistryAdapters } from './ministry.types.js';

type Operation = Exclude<keyof MinistryAdapter, 'source'>;
const OPERATIONS: Operation[] = ['search', 'getByRef', 'submitPayment', 'getPayment', 'cancelPayment', 'settlement'];

function instrument(adapter: MinistryAdapter, metrics: Metrics): MinistryAdapter {
  const wrapped: Record<string, unknown> = { source: adapter.source };
  for (const op of OPERATIONS) {
    const call = adapter[op].bind(adapter) as (...args: unknown[]) => Promise<unknown>;
    wrapped[op] = async (...args: unknown[]) => {
      const end = metrics.upstreamDuration.startTimer({ source: adapter.source, operation: op });
      try {
        const result = await call(...args);
        end({ outcome: 'ok' });
        return result;
      } catch (err) {
        end({ outcome: 'error' });
        metrics.upstreamErrors.inc({ source: adapter.source, operation: op, kind: err instanceof UpstreamError ? err.kind : 'other' });
        throw err;
      }
    };
  }
  return wrapped as unknown as MinistryAdapter;
}

/** Latency and error metrics per source and operation, without touching the adapters. */
export function instrumentAdapters(adapters: MinistryAdapters, metrics: Metrics): MinistryAdapters {
  return { mof: instrument(adapters.mof, metrics), etax: instrument(adapters.etax, metrics), police: instrument(adapters.police, metrics) };
}
