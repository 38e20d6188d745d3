import { Counter, type Registry } from 'prom-client';

export function leaseMetrics(registry: Registry) {
  return {
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
  };
}
