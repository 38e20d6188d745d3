import type { Metrics } from '../adapters/metrics.js';
import type { ReportRepository } from '../db/repositories/report.repository.js';
import type { WebhookDeliveryRepository } from '../db/repositories/webhook-delivery.repository.js';
import type { ReconciliationRepository } from '../db/repositories/reconciliation.repository.js';
import type { WebhookRepository } from '../db/repositories/webhook.repository.js';

export interface BacklogSources {
  reports: ReportRepository;
  deliveries: WebhookDeliveryRepository;
  reconciliations: ReconciliationRepository;
  webhooks: WebhookRepository;
}

/** The gauges read from the database when the metrics are scraped. */
export function observeBacklogs(metrics: Metrics, repos: BacklogSources): void {
  metrics.observe({
    paymentsByStatus: () => repos.reports.paymentsByStatus(),
    outboxBacklog: () => repos.deliveries.countPending(),
    openDiscrepancies: () => repos.reconciliations.openByKind(),
    lastReconciliation: () => repos.reconciliations.lastCompleted(),
    confirmationBacklog: () => repos.reports.unresolvedBySource(),
    disabledWebhooks: () => repos.webhooks.countDisabled(),
  });
}
