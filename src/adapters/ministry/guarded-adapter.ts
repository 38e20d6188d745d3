import { createCircuitBreaker, type CircuitBreakerOptions, type CircuitState } from '../../domain/circuit-breaker.js';
import type { Source } from '../../domain/vocabulary.js';
import { UpstreamError, type MinistryAdapters } from '../../domain/ministry.port.js';
import { wrapAdapters, type Operation } from './adapter-wrapper.js';

/** Told a breaker's state after each call it judged or refused (for the gauge). */
export type CircuitStateReport = (source: Source, operation: Operation, state: CircuitState) => void;

/**
 * Fails fast while a ministry system keeps failing, so partners get an answer from the other
 * systems (or a quick 503) instead of every request waiting out the timeout. One breaker per
 * source and operation: a system whose status call hangs under a burst of reads still takes
 * submissions and lookups, which fail or succeed on their own record. Only upstream failures
 * count; a clean "not found" or refusal is a healthy answer.
 */
export function guardAdapters(
  adapters: MinistryAdapters,
  opts: CircuitBreakerOptions,
  now: () => number = Date.now,
  onState: CircuitStateReport = () => undefined,
): MinistryAdapters {
  return wrapAdapters(adapters, (source) => (op, call) => {
    const breaker = createCircuitBreaker(opts);
    return async (...args) => {
      if (!breaker.allow(now())) {
        onState(source, op, breaker.state());
        throw new UpstreamError(source, 'circuit-open', `${op} refused while the circuit is open`);
      }
      try {
        const result = await call(...args);
        breaker.success();
        return result;
      } catch (err) {
        if (err instanceof UpstreamError) breaker.failure(now());
        else breaker.success();
        throw err;
      } finally {
        onState(source, op, breaker.state());
      }
    };
  });
}
