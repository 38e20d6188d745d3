import { createCircuitBreaker, type CircuitBreakerOptions } from '../../domain/circuit-breaker.js';
import { UpstreamError, type MinistryAdapters } from './ministry.types.js';
import { wrapAdapters } from './adapter-wrapper.js';

/**
 * Fails fast while a ministry system keeps failing, so partners get an answer from the other
 * systems (or a quick 503) instead of every request waiting out the timeout. One breaker per
 * source and operation: a system whose status call hangs under a burst of reads still takes
 * submissions and lookups, which fail or succeed on their own record. Only upstream failures
 * count; a clean "not found" or refusal is a healthy answer.
 */
export function guardAdapters(adapters: MinistryAdapters, opts: CircuitBreakerOptions, now: () => number = Date.now): MinistryAdapters {
  return wrapAdapters(adapters, (source) => (op, call) => {
    const breaker = createCircuitBreaker(opts);
    return async (...args) => {
      if (!breaker.allow(now())) throw new UpstreamError(source, 'circuit-open', `${op} refused while the circuit is open`);
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
  });
}
