import { Counter, Gauge, Histogram, type Registry } from 'prom-client';

export function ministryCallMetrics(registry: Registry) {
  return {
    upstreamDuration: new Histogram({
      name: 'ministry_call_duration_seconds',
      help: 'Ministry system call latency by source, operation and outcome',
      labelNames: ['source', 'operation', 'outcome'] as const,
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
      registers: [registry],
    }),
    upstreamErrors: new Counter({
      name: 'ministry_call_errors_total',
      help: 'Failed ministry system calls by source, operation and kind',
      labelNames: ['source', 'operation', 'kind'] as const,
      registers: [registry],
    }),
    ministryCircuitOpen: new Gauge({
      name: 'ministry_circuit_open',
      help: 'Whether the circuit breaker of a ministry system and operation refuses calls (1: open, or half-open with one trial call let through) or lets them through (0), by source and operation; set on each call',
      labelNames: ['source', 'operation'] as const,
      registers: [registry],
    }),
  };
}

/** How fast payments approved at a ministry system are confirmed here, and how hard it is checked. */
export function confirmationMetrics(registry: Registry) {
  return {
    ministryConcurrencyLimit: new Gauge({
      name: 'ministry_concurrency_limit',
      help: "Checks this instance may have in flight at each ministry system now (its adaptive limit)",
      labelNames: ['source'] as const,
      registers: [registry],
    }),
    confirmationLag: new Histogram({
      name: 'payment_confirmation_lag_seconds',
      help: "Time from the ministry's approval of a payment to its confirmation here, by source",
      labelNames: ['source'] as const,
      buckets: [0.5, 1, 2, 5, 10, 30, 60, 300, 900, 3600, 86_400],
      registers: [registry],
    }),
  };
}
