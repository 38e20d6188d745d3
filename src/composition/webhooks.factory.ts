import type { Config } from '../config/config.js';
import { createWebhookHttpClient } from '../adapters/webhook-http.client.js';
import { createTargetGuard } from '../adapters/webhook-target.guard.js';
import { createPushSender } from '../adapters/push-sender.js';
import { createWebhookService } from '../services/webhook.service.js';
import { createWebhookDeliveryService } from '../services/webhook-delivery.service.js';
import { createDeviceService } from '../services/device.service.js';
import { createPushDeliveryService } from '../services/push-delivery.service.js';
import { createWebhookDeliveryJob } from '../jobs/webhook-delivery.job.js';
import { createSecretCipher, type SecretCipher } from '../domain/secret-cipher.js';
import { webhookTargetPolicy } from '../domain/webhook-target.js';
import type { Data, Runtime } from './data.factory.js';

export type WebhooksDeps = Pick<Data, 'repos' | 'dbOutage' | 'priority'>;

/** The outbox's delivery: its HTTP client, the per-attempt service and the job that drives them. */
function createWebhookDelivery(config: Config, runtime: Runtime, cipher: SecretCipher, deps: WebhooksDeps) {
  const deliveries = deps.repos.webhookDeliveries;
  const http = createWebhookHttpClient({ timeoutMs: config.webhookTimeoutMs, allowPrivate: config.webhookAllowPrivate });
  const service = createWebhookDeliveryService({
    deliveries,
    cipher,
    http,
    retryScheduleMs: config.webhookRetryScheduleMs,
    log: runtime.logger,
    onResult: (outcome) => runtime.metrics.webhookDeliveries.inc({ outcome }),
    onStaleLease: runtime.onStaleLease,
    tracer: runtime.tracer,
    now: runtime.now,
  });
  const job = createWebhookDeliveryJob({
    deliveries,
    service,
    intervalMs: config.webhookPollMs,
    leaseMs: runtime.leases.webhook,
    passDeadlineMs: runtime.leases.passes.webhooks,
    concurrency: config.webhookConcurrency,
    slowConcurrency: config.webhookSlowConcurrency,
    log: runtime.logger,
    outage: deps.dbOutage,
    background: deps.priority?.background,
    now: runtime.now,
  });
  return { job, close: () => http.close() };
}

/** The partners' webhooks, the delivery of their events, and the nudge that delivers a queued event now. */
export function createWebhooks(config: Config, runtime: Runtime, deps: WebhooksDeps) {
  const cipher = createSecretCipher(config.webhookSecretKey);
  const delivery = createWebhookDelivery(config, runtime, cipher, deps);
  // An `api` process runs no background work: its queued deliveries wait for a worker's next poll.
  const nudge = () => {
    if (config.processRole !== 'api') delivery.job.nudge();
  };
  const webhooks = createWebhookService({
    webhooks: deps.repos.webhooks,
    deliveries: deps.repos.webhookDeliveries,
    deliveryLog: deps.repos.deliveryLog,
    cipher,
    guard: createTargetGuard(webhookTargetPolicy(config.appEnv, config.webhookAllowPrivate)),
    maxPerPartner: config.webhookMaxPerPartner,
    secretRotationGraceMs: config.webhookSecretRotationGraceMs,
    eventRetentionMs: config.retention.eventMs,
    recoverBatch: config.webhookRecoverBatch,
    onQueued: nudge,
    onRecoverBatch: (queued) => {
      runtime.metrics.webhookRecoverBatches.inc();
      runtime.metrics.webhookRecovered.inc(queued);
    },
    now: runtime.now,
  });
  return { webhooks, job: delivery.job, nudge, close: delivery.close };
}

export type Webhooks = ReturnType<typeof createWebhooks>;

/** The end users' devices and the push notifications sent to them. */
export async function createPushes(config: Config, runtime: Runtime, repos: Pick<Data['repos'], 'devices' | 'pushDeliveries'>) {
  const devices = createDeviceService({ devices: repos.devices, now: runtime.now });
  const service = createPushDeliveryService({
    pushes: repos.pushDeliveries,
    sender: await createPushSender(config.fcm, { log: runtime.logger, timeoutMs: config.webhookTimeoutMs, now: runtime.now }),
    retryScheduleMs: config.webhookRetryScheduleMs,
    log: runtime.logger,
    onStaleLease: runtime.onStaleLease,
    onResult: (outcome) => runtime.metrics.pushDeliveries.inc({ outcome }),
    tracer: runtime.tracer,
    now: runtime.now,
  });
  return { devices, service };
}

export type Pushes = Awaited<ReturnType<typeof createPushes>>;
