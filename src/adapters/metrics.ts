import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

export interface MetricsSources {
  /** Counts of payments by status, read at scrape time. */
  paymentsByStatus?: () => Promise<Record<string, number>>;
  /** Rows still waiting in the outbox (undelivered webhook deliveries), read at scrape time. */
  outboxBacklog?: () => Promise<number>;
  /** Open reconciliation discrepancies by kind. */
  openDiscrepancies?: () => Promise<Record<string, number>>;
  /** When each ministry system's reconciliation last completed. */
  lastReconciliation?: () => Promise<{ source: string; at: Date }[]>;
  /** Unresolved payments due for a check, per ministry system. */
  confirmationBacklog?: () => Promise<Record<string, number>>;
  /** Disabled webhooks by reason (manual, failing). */
  disabledWebhooks?: () => Promise<Record<string, number>>;
}

/**
 * A scrape-time read that failed (the database is away) leaves the gauge at its last values
 * rather than failing the whole scrape: `database_up` and the request and job metrics matter most
 * during an outage.
 */
async function readOrKeep<T>(read: () => Promise<T>): Promise<T | undefined> {
  try {
    return await read();
  } catch {
    return undefined;
  }
}

/** A gauge with one label, set at scrape time from a count per label value. */
function labelledGauge(registry: Registry, name: string, help: string, label: string, read: () => Promise<Record<string, number>>) {
  return new Gauge({
    name,
    help,
    labelNames: [label],
    registers: [registry],
    async collect() {
      const counts = await readOrKeep(read);
      if (counts === undefined) return;
      this.reset();
      for (const [value, n] of Object.entries(counts)) this.set({ [label]: value }, n);
    },
  });
}

/** One registry per process, created by createDeps: no module-level singletons. */
export function createMetrics() {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const metrics = {
    registry,
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
    staleLeaseWrites: new Counter({
      name: 'stale_lease_writes_total',
      help: 'Writes refused because their holder had lost the lease (it stalled past it and another instance took the work), by kind of work',
      labelNames: ['work'] as const,
      registers: [registry],
    }),
    webhookDeliveries: new Counter({
      name: 'webhook_deliveries_total',
      help: 'Webhook delivery attempts by outcome',
      labelNames: ['outcome'] as const,
      registers: [registry],
    }),
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
    /** Wires the gauges that read the database at scrape time. */
    observe(sources: MetricsSources) {
      labelledGauge(registry, 'payments_by_status', 'Payments by status', 'status', async () => (await sources.paymentsByStatus?.()) ?? {});
      labelledGauge(registry, 'reconciliation_open_discrepancies', 'Open reconciliation discrepancies by kind', 'kind', async () => (await sources.openDiscrepancies?.()) ?? {});
      labelledGauge(registry, 'payment_confirmation_backlog', 'Unresolved payments due for a check, by source', 'source', async () => (await sources.confirmationBacklog?.()) ?? {});
      labelledGauge(registry, 'webhooks_disabled', 'Disabled webhooks by reason: manual (by the partner) or failing (every attempt failed for WEBHOOK_DISABLE_AFTER_MS)', 'reason', async () =>
        (await sources.disabledWebhooks?.()) ?? {},
      );
      labelledGauge(registry, 'reconciliation_last_success_timestamp_seconds', 'When each source was last reconciled successfully', 'source', async () =>
        Object.fromEntries(((await sources.lastReconciliation?.()) ?? []).map((r) => [r.source, r.at.getTime() / 1000])),
      );
      new Gauge({
        name: 'webhook_outbox_backlog',
        help: 'Webhook deliveries not yet delivered or failed for good',
        registers: [registry],
        async collect() {
          const backlog = await readOrKeep(async () => (await sources.outboxBacklog?.()) ?? 0);
          if (backlog !== undefined) this.set(backlog);
        },
      });
    },
  };
  metrics.databaseUp.set(1);
  return metrics;
}

export type Metrics = ReturnType<typeof createMetrics>;
