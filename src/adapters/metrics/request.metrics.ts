import { Counter, Gauge, Histogram, type Registry } from 'prom-client';

/** Whether requests can be served at all, and how the partner API answers them. */
export function requestMetrics(registry: Registry) {
  return {
    databaseUp: new Gauge({
      name: 'database_up',
      help: 'Whether this instance reaches its database (0 during an outage: background work paused, requests that need it answer 503)',
      registers: [registry],
    }),
    httpRequests: new Counter({
      name: 'http_requests_total',
      help: 'Partner API requests by route and status',
      labelNames: ['method', 'route', 'status'] as const,
      registers: [registry],
    }),
    httpDuration: new Histogram({
      name: 'http_request_duration_seconds',
      help: 'Partner API latency by route and status',
      labelNames: ['method', 'route', 'status'] as const,
      buckets: [0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
      registers: [registry],
    }),
  };
}

export function rateLimitMetrics(registry: Registry) {
  return {
    rateLimitRejections: new Counter({
      name: 'rate_limit_rejections_total',
      help: 'Requests refused with 429',
      registers: [registry],
    }),
    rateLimitStoreErrors: new Counter({
      name: 'rate_limit_store_errors_total',
      help: 'Rate-limit store failures (fail-open or fail-closed applied)',
      registers: [registry],
    }),
  };
}
