import type { PushDeliveryRepository } from '../db/repositories/push-delivery.repository.js';
import type { PushDeliveryService } from '../services/push-delivery.service.js';
import type { Job } from './job-runner.js';
import { systemClock, type Clock } from '../domain/clock.port.js';

/**
 * Pushes queued by confirmations, fed from the outbox like webhooks: each pass claims a bounded,
 * per-partner-fair batch (safe on several instances) and sends it; a failed push waits for its
 * retry. Confirmations never wait for a push.
 */
export function createPushDeliveryJob(deps: {
  pushes: PushDeliveryRepository;
  service: PushDeliveryService;
  intervalMs: number;
  timeoutMs: number;
  limits: { total: number; perPartner: number };
  now?: Clock;
}): Job {
  const now = deps.now ?? systemClock;
  return {
    name: 'push-delivery',
    intervalMs: deps.intervalMs,
    async run() {
      const at = now();
      // The lease outlasts one send: a worker that dies mid-send lets it run out and another retries.
      const claims = await deps.pushes.claimDue(at, new Date(at.getTime() + 2 * deps.timeoutMs), deps.limits);
      await Promise.all(claims.map((claim) => deps.service.attempt(claim)));
    },
  };
}
