export type CircuitState = 'closed' | 'open' | 'half-open';

export interface CircuitBreakerOptions {
  /** Consecutive failures that open the circuit. */
  failureThreshold: number;
  /** How long an open circuit refuses calls before letting one trial call through. */
  openMs: number;
}

/**
 * A circuit breaker state machine, one per ministry system and operation. Pure: the caller
 * passes the time, so it is tested without waiting.
 *
 * Kept by hand rather than cockatiel's circuit breaker policy: that policy keeps its own time and
 * wraps the call itself, while the adapters drive this one from the service's injected clock (tests
 * move it forward without waiting). Forty lines with no I/O are the whole of what they need.
 */
export function createCircuitBreaker(opts: CircuitBreakerOptions) {
  let state: CircuitState = 'closed';
  let failures = 0;
  let openedAt = 0;
  let trialInFlight = false;

  return {
    /** Whether a call may go upstream now; in half-open state only one trial at a time. */
    allow(now: number): boolean {
      if (state === 'open' && now - openedAt >= opts.openMs) state = 'half-open';
      if (state === 'closed') return true;
      if (state === 'half-open' && !trialInFlight) {
        trialInFlight = true;
        return true;
      }
      return false;
    },
    success(): void {
      state = 'closed';
      failures = 0;
      trialInFlight = false;
    },
    failure(now: number): void {
      trialInFlight = false;
      failures += 1;
      if (state === 'half-open' || failures >= opts.failureThreshold) {
        state = 'open';
        openedAt = now;
      }
    },
    state: (): CircuitState => state,
  };
}

export type CircuitBreaker = ReturnType<typeof createCircuitBreaker>;
