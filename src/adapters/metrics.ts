import { Registry, collectDefaultMetrics } from 'prom-client';
import { confirmationMetrics, ministryCallMetrics } from './metrics/ministry.metrics.js';
import { rateLimitMetrics, requestMetrics } from './metrics/request.metrics.js';
import { observeSources, type MetricsSources } from './metrics/scrape.metrics.js';
import { leaseMetrics, webhookMetrics } from './metrics/work.metrics.js';

export type { MetricsSources } from './metrics/scrape.metrics.js';

/** One registry per process, created by createDeps: no module-level singletons. */
export function createMetrics() {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const metrics = {
    registry,
    ...requestMetrics(registry),
    ...ministryCallMetrics(registry),
    ...rateLimitMetrics(registry),
    ...leaseMetrics(registry),
    ...webhookMetrics(registry),
    ...confirmationMetrics(registry),
    /** Wires the gauges that read the database at scrape time. */
    observe(sources: MetricsSources) {
      observeSources(registry, sources);
    },
  };
  metrics.databaseUp.set(1);
  return metrics;
}

export type Metrics = ReturnType<typeof createMetrics>;
