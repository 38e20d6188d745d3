import { Gauge, type Registry } from 'prom-client';

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
  /** Per ministry system, seconds its longest-unchecked submitted payment has gone without a status check. */
  uncheckedPaymentAge?: () => Promise<Record<string, number>>;
  /** Seconds the longest-waiting due delivery of an enabled webhook has been due (0 when none is). */
  dueDeliveryAge?: () => Promise<number>;
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

/** Registers the gauges that read the database at scrape time. */
export function observeSources(registry: Registry, sources: MetricsSources): void {
  labelledGauge(registry, 'payments_by_status', 'Payments by status', 'status', async () => (await sources.paymentsByStatus?.()) ?? {});
  labelledGauge(registry, 'reconciliation_open_discrepancies', 'Open reconciliation discrepancies by kind', 'kind', async () => (await sources.openDiscrepancies?.()) ?? {});
  labelledGauge(registry, 'payment_confirmation_backlog', 'Unresolved payments due for a check, by source', 'source', async () => (await sources.confirmationBacklog?.()) ?? {});
  labelledGauge(registry, 'webhooks_disabled', 'Disabled webhooks by reason: manual (by the partner) or failing (every attempt failed for WEBHOOK_DISABLE_AFTER_MS)', 'reason', async () =>
    (await sources.disabledWebhooks?.()) ?? {},
  );
  labelledGauge(registry, 'reconciliation_last_success_timestamp_seconds', 'When each source was last reconciled successfully', 'source', async () =>
    Object.fromEntries(((await sources.lastReconciliation?.()) ?? []).map((r) => [r.source, r.at.getTime() / 1000])),
  );
  labelledGauge(
    registry,
    'payment_status_unchecked_seconds',
    "How long the submitted payment of each source that has gone longest without a status check with its ministry has waited, since its last check (or its submission); no series for a source with no submitted payment",
    'source',
    async () => (await sources.uncheckedPaymentAge?.()) ?? {},
  );
  plainGauge(registry, 'webhook_outbox_backlog', 'Webhook deliveries not yet delivered or failed for good', async () => (await sources.outboxBacklog?.()) ?? 0);
  plainGauge(
    registry,
    'webhook_delivery_oldest_due_seconds',
    'How long the pending delivery of an enabled webhook that has waited longest since its attempt fell due has waited (0 when none is due)',
    async () => (await sources.dueDeliveryAge?.()) ?? 0,
  );
}

/** A gauge without labels, set at scrape time. */
function plainGauge(registry: Registry, name: string, help: string, read: () => Promise<number>) {
  return new Gauge({
    name,
    help,
    registers: [registry],
    async collect() {
      const value = await readOrKeep(read);
      if (value !== undefined) this.set(value);
    },
  });
}
