import { describe, expect, it } from 'vitest';
import { createCircuitBreaker } from '../../src/domain/circuit-breaker.js';

describe('circuit breaker', () => {
  it('opens after the threshold of consecutive failures and refuses calls', () => {
    const cb = createCircuitBreaker({ failureThreshold: 3, openMs: 1000 });
    for (let i = 0; i < 2; i++) cb.failure(0);
    expect(cb.allow(0)).toBe(true);
    cb.failure(0);
    expect(cb.state()).toBe('open');
    expect(cb.allow(500)).toBe(false);
  });

  it('a success resets the failure count', () => {
    const cb = createCircuitBreaker({ failureThreshold: 2, openMs: 1000 });
    cb.failure(0);
    cb.success();
    cb.failure(0);
    expect(cb.state()).toBe('closed');
  });

  it('lets one trial through after the open period, closing on success and reopening on failure', () => {
    const cb = createCircuitBreaker({ failureThreshold: 1, openMs: 1000 });
    cb.failure(0);
    expect(cb.allow(1000)).toBe(true);
    expect(cb.allow(1000)).toBe(false);
    cb.failure(1000);
    expect(cb.state()).toBe('open');
    expect(cb.allow(1500)).toBe(false);
    expect(cb.allow(2000)).toBe(true);
    cb.success();
    expect(cb.state()).toBe('closed');
    expect(cb.allow(2000)).toBe(true);
  });
});
