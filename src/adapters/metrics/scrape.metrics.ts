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
  /** Unresolved cases by type and status: how many, how many past due, and the age of the oldest in seconds. */
  unresolvedCases?: () => Promise<{ type: string; status: string; count: number; overdue: number; oldestAgeSeconds: number }[]>;
}

/** The unresolved cases' gauges, each set from one read at scrape time. */
function caseGauges(registry: Registry, source: () => Promise<{ type: string; status: string; count: number; overdue: number; oldestAgeSeconds: number }[]>) {
  // A scrape collects every gauge at once: the three share the read under way, one query a scrape.
  let pending: ReturnType<typeof source> | null = null;
  const read = () =>
    (pending ??= source().finally(() => {
      pending = null;
    }));
  const gauge = (name: string, help: string, labelNames: string[], set: (g: Gauge, rows: Awaited<ReturnType<typeof read>>) => void) =>
    new Gauge({
      name,
      help,
      labelNames,
      registers: [registry],
      async collect() {
        const rows = await readOrKeep(read);
        if (rows === undefined) return;
        this.reset();
        set(this, rows);
      },
    });
  gauge('cases_open', 'Unresolved partner cases by type and status (open, in_progress, escalated)', ['type', 'status'], (g, rows) => {
    for (const r of rows) g.set({ type: r.type, status: r.status }, r.count);
  });
  gauge('cases_overdue', 'Unresolved partner cases past their due time (breaches of CASE_TURNAROUND_HOURS), by type', ['type'], (g, rows) => {
    const byType = new Map<string, number>();
    for (const r of rows) byType.set(r.type, (byType.get(r.type) ?? 0) + r.overdue);
    for (const [type, n] of byType) g.set({ type }, n);
  });
  gauge('case_oldest_open_age_seconds', 'How long the oldest unresolved case of each type has waited since it opened; no series for a type with none', ['type'], (g, rows) => {
    const byType = new Map<string, number>();
    for (const r of rows) byType.set(r.type, Math.max(byType.get(r.type) ?? 0, r.oldestAgeSeconds));
    for (const [type, n] of byType) g.set({ type }, n);
  });
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
  caseGauges(registry, async () => (await sources.unresolvedCases?.()) ?? []);
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
