import { createCircuitBreaker, type CircuitBreakerOptions } from '../domain/circuit-breaker.js';
import { UpstreamError, type MinistryAdapter, type MinistryAdapters } from './ministry.types.js';

type Operation = Exclude<keyof MinistryAdapter, 'source'>;
const OPERATIONS: Operation[] = ['search', 'getByRef', 'submitPayment', 'getPayment', 'cancelPayment', 'settlement'];

/**
 * Fails fast while a ministry system keeps failing, so partners get an answer from the other
 * systems (or a quick 503) instead of every request waiting out the timeout.
 * Only upstream failures count; a clean "not found" or refusal is a healthy answer.
 */
function guard(adapter: MinistryAdapter, opts: CircuitBreakerOptions, now: () => number): MinistryAdapter {
  const breaker = createCircuitBreaker(opts);
  const guarded: Record<string, unknown> = { source: adapter.source };
  for (const op of OPERATIONS) {
    const call = adapter[op].bind(adapter) as (...args: unknown[]) => Promise<unknown>;
    guarded[op] = async (...args: unknown[]) => {
      if (!breaker.allow(now())) throw new UpstreamError(adapter.source, 'circuit-open', `${op} refused while the circuit is open`);
      try {
        const result = await call(...args);
        breaker.success();
        return result;
      } catch (err) {
        if (err instanceof UpstreamError) breaker.failure(now());
        else breaker.success();
        throw err;
      }
    };
  }
  return guarded as unknown as MinistryAdapter;
}

export function guardAdapters(adapters: MinistryAdapters, opts: CircuitBreakerOptions, now: () => number = Date.now): MinistryAdapters {
  return { mof: guard(adapters.mof, opts, now), etax: guard(adapters.etax, opts, now), police: guard(adapters.police, opts, now) };
}
