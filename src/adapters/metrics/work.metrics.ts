import { Counter, Gauge, type Registry } from 'prom-client';

export function leaseMetrics(registry: Registry) {
  return {
    workPassAbandoned: new Counter({
      name: 'work_pass_abandoned_total',
      help: 'Background passes given up past their deadline (their leases hand the work to the next pass or another instance), by loop',
      labelNames: ['work'] as const,
      registers: [registry],
    }),
    /** Wires `work_loop_stalled{work}`: 1 while a loop has not completed a pass for 3 × its interval. */
    observeStalledWork(stalled: () => string[], loops: readonly string[]) {
      new Gauge({
        name: 'work_loop_stalled',
        help: 'Whether a background loop has completed no pass for 3 times its interval (1) or is running (0), by loop',
        labelNames: ['work'] as const,
        registers: [registry],
        collect() {
          const now = new Set(stalled());
          for (const work of loops) this.set({ work }, now.has(work) ? 1 : 0);
        },
      });
    },
    routedReads: new Counter({
      name: 'database_routed_reads_total',
      help: 'Queries of the reads that may run on the replica (DATABASE_REPLICA_URL), by where they ran: replica, or primary while the replica lags',
      labelNames: ['target'] as const,
      registers: [registry],
    }),
    replicaLag: new Gauge({
      name: 'database_replica_lag_seconds',
      help: "The replica's replay lag at its last measurement (-1: it did not answer)",
      registers: [registry],
    }),
    caseEscalations: new Counter({
      name: 'case_escalations_total',
      help: 'Partner cases escalated because their due time (CASE_TURNAROUND_HOURS) passed unresolved, by type',
      labelNames: ['type'] as const,
      registers: [registry],
    }),
    staleLeaseWrites: new Counter({
      name: 'stale_lease_writes_total',
      help: 'Writes refused because their holder had lost the lease (it stalled past it and another instance took the work), by kind of work',
      labelNames: ['work'] as const,
      registers: [registry],
    }),
  };
}

export function webhookMetrics(registry: Registry) {
  return {
    webhookDeliveries: new Counter({
      name: 'webhook_deliveries_total',
      help: 'Webhook delivery attempts by outcome',
      labelNames: ['outcome'] as const,
      registers: [registry],
    }),
    webhookRecoverBatches: new Counter({
      name: 'webhook_recover_batches_total',
      help: 'Statements run by webhook recoveries and enables, each queueing or making due at most WEBHOOK_RECOVER_BATCH deliveries',
      registers: [registry],
    }),
    webhookRecovered: new Counter({
      name: 'webhook_recovered_deliveries_total',
      help: 'Deliveries queued or made due by webhook recoveries and enables',
      registers: [registry],
    }),
    pushDeliveries: new Counter({
      name: 'push_deliveries_total',
      help: 'Push attempts by outcome: delivered (FCM took it), skipped (no FCM credentials: nothing sent), retry, failed',
      labelNames: ['outcome'] as const,
      registers: [registry],
    }),
  };
}
