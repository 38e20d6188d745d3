import type { Job } from '../work/job-runner.js';
import type { WebhookRepository } from '../db/repositories/webhook.repository.js';
import type { Logger } from '../domain/logger.port.js';
import type { Clock } from '../domain/clock.port.js';

/** Most webhooks disabled in one pass; more wait for the next. */
const BATCH = 100;

/**
 * Disables (reason `failing`) the webhooks whose every attempt has failed for `disableAfterMs`,
 * so a receiver that is gone for good stops being retried for ever; their pending deliveries wait
 * and nothing is lost (the events stay, and recover queues them once the partner enables it again).
 * One bounded UPDATE that skips rows another instance holds: idempotent and safe on several.
 */
export function createWebhookHealthJob(deps: {
  webhooks: Pick<WebhookRepository, 'disableFailing'>;
  disableAfterMs: number;
  intervalMs: number;
  /** A pass past this is abandoned (Job.deadlineMs). */
  deadlineMs?: number;
  log: Logger;
  now: Clock;
}): Job {
  const { now } = deps;
  return {
    name: 'webhook-health',
    intervalMs: deps.intervalMs,
    deadlineMs: deps.deadlineMs,
    async run() {
      const disabled = await deps.webhooks.disableFailing(deps.disableAfterMs, now(), BATCH);
      for (const w of disabled) {
        deps.log.warn({ webhookId: w.id, partnerId: w.partner_id, disableAfterMs: deps.disableAfterMs }, 'webhook disabled: every attempt failed for too long');
      }
    },
  };
}
