import type { Metrics } from '../adapters/metrics.js';
import type { Clock } from '../domain/clock.port.js';
import type { Repositories } from './repositories.factory.js';

export type BacklogSources = Pick<Repositories, 'reports' | 'webhookDeliveries' | 'reconciliations' | 'webhooks' | 'cases'>;

const secondsSince = (at: Date, now: Date) => Math.max(0, (now.getTime() - at.getTime()) / 1000);

/**
 * The gauges read from the database when the metrics are scraped. Ages are measured on `now`, the
 * clock that wrote the times they are measured from.
 */
export function observeBacklogs(metrics: Metrics, repos: BacklogSources, now: Clock): void {
  metrics.observe({
    paymentsByStatus: () => repos.reports.paymentsByStatus(),
    outboxBacklog: () => repos.webhookDeliveries.countPending(),
    openDiscrepancies: () => repos.reconciliations.openByKind(),
    lastReconciliation: () => repos.reconciliations.lastCompleted(),
    confirmationBacklog: () => repos.reports.unresolvedBySource(),
    disabledWebhooks: () => repos.webhooks.countDisabled(),
    uncheckedPaymentAge: async () => {
      const since = await repos.reports.oldestUncheckedBySource();
      const at = now();
      return Object.fromEntries(Object.entries(since).map(([source, t]) => [source, secondsSince(t, at)]));
    },
    unresolvedCases: async () => {
      const at = now();
      return (await repos.cases.unresolvedCounts(at)).map((c) => ({ ...c, oldestAgeSeconds: c.oldestAt ? secondsSince(c.oldestAt, at) : 0 }));
    },
    dueDeliveryAge: async () => {
      const due = await repos.webhookDeliveries.earliestDue();
      return due === null ? 0 : secondsSince(due, now());
    },
  });
}
