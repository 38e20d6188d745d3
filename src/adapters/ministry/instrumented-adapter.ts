import type { Metrics } from '../metrics.js';
import { UpstreamError, type MinistryAdapters } from '../../domain/ministry.port.js';
import { wrapAdapters } from './adapter-wrapper.js';

/** Latency and error metrics per source and operation, without touching the adapters. */
export function instrumentAdapters(adapters: MinistryAdapters, metrics: Metrics): MinistryAdapters {
  return wrapAdapters(adapters, (source) => (operation, call) => async (...args) => {
    const end = metrics.upstreamDuration.startTimer({ source, operation });
    try {
      const result = await call(...args);
      end({ outcome: 'ok' });
      return result;
    } catch (err) {
      end({ outcome: 'error' });
      metrics.upstreamErrors.inc({ source, operation, kind: err instanceof UpstreamError ? err.kind : 'other' });
      throw err;
    }
  });
}
