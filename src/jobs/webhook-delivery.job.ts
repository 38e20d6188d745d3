import type { Job } from './job-runner.js';
import type { WebhookDeliveryRepository } from '../db/repositories/webhook-delivery.repository.js';
import type { WebhookDeliveryService } from '../services/webhook-delivery.service.js';

/** Time a claim stays ours beyond the request timeout, for recording the outcome. */
const LEASE_MARGIN_MS = 30_000;

/**
 * Delivers due webhook deliveries. Rows are claimed with SKIP LOCKED and a lease, so any number
 * of instances can run this at once and each attempt is made by one of them; a claimed batch is
 * sent in parallel so one slow receiver does not hold up the others.
 */
export function createWebhookDeliveryJob(deps: {
  deliveries: WebhookDeliveryRepository;
  service: WebhookDeliveryService;
  intervalMs: number;
  timeoutMs: number;
  batchSize?: number;
  now?: () => Date;
}): Job {
  const now = deps.now ?? (() => new Date());
  return {
    name: 'webhook-delivery',
    intervalMs: deps.intervalMs,
    async run() {
      const at = now();
      const leaseUntil = new Date(at.getTime() + deps.timeoutMs + LEASE_MARGIN_MS);
      const claimed = await deps.deliveries.claimDue(at, leaseUntil, deps.batchSize ?? 50);
      const settled = await Promise.allSettled(claimed.map((claim) => deps.service.attempt(claim)));
      const failed = settled.find((s) => s.status === 'rejected');
      // An unrecorded attempt is retried when its lease runs out; the runner logs the cause.
      if (failed) throw failed.reason;
    },
  };
}
