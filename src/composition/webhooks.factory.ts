import type { Config } from '../config.js';
import { createWebhookRepository } from '../db/repositories/webhook.repository.js';
import { createWebhookDeliveryRepository } from '../db/repositories/webhook-delivery.repository.js';
import { createDeliveryLogRepository } from '../db/repositories/delivery-log.repository.js';
import { createDeviceRepository } from '../db/repositories/device.repository.js';
import { createPushDeliveryRepository } from '../db/repositories/push-delivery.repository.js';
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
import type { Clock } from '../domain/clock.port.js';
import type { Data } from './data.factory.js';

export type WebhooksDeps = Pick<Data, 'db' | 'logger' | 'metrics' | 'dbOutage' | 'priority' | 'onStaleLease' | 'leases' | 'tracer'> & { now: Clock };

/** The outbox's delivery: its HTTP client, the per-attempt service and the job that drives them. */
function createWebhookDelivery(config: Config, cipher: SecretCipher, deps: WebhooksDeps) {
  const deliveries = createWebhookDeliveryRepository(deps.db);
  const http = createWebhookHttpClient({ timeoutMs: config.webhookTimeoutMs, allowPrivate: config.webhookAllowPrivate });
  const service = createWebhookDeliveryService({
    deliveries,
    cipher,
    http,
    retryScheduleMs: config.webhookRetryScheduleMs,
    log: deps.logger,
    onResult: (outcome) => deps.metrics.webhookDeliveries.inc({ outcome }),
    onStaleLease: deps.onStaleLease,
    tracer: deps.tracer,
    now: deps.now,
  });
  const job = createWebhookDeliveryJob({
    deliveries,
    service,
    intervalMs: config.webhookPollMs,
    leaseMs: deps.leases.webhook,
    passDeadlineMs: deps.leases.passes.webhooks,
    concurrency: config.webhookConcurrency,
    slowConcurrency: config.webhookSlowConcurrency,
    log: deps.logger,
    outage: deps.dbOutage,
    background: deps.priority?.background,
    now: deps.now,
  });
  return { deliveries, job, close: () => http.close() };
}

/** The partners' webhooks, the delivery of their events, and the nudge that delivers a queued event now. */
export function createWebhooks(config: Config, deps: WebhooksDeps) {
  const cipher = createSecretCipher(config.webhookSecretKey);
  const delivery = createWebhookDelivery(config, cipher, deps);
  // An `api` process runs no background work: its queued deliveries wait for a worker's next poll.
  const nudge = () => {
    if (config.processRole !== 'api') delivery.job.nudge();
  };
  const repo = createWebhookRepository(deps.db);
  const webhooks = createWebhookService({
    webhooks: repo,
    deliveries: delivery.deliveries,
    deliveryLog: createDeliveryLogRepository(deps.db),
    cipher,
    guard: createTargetGuard(webhookTargetPolicy(config.appEnv, config.webhookAllowPrivate)),
    maxPerPartner: config.webhookMaxPerPartner,
    secretRotationGraceMs: config.webhookSecretRotationGraceMs,
    eventRetentionMs: config.retention.eventMs,
    recoverBatch: config.webhookRecoverBatch,
    onQueued: nudge,
    onRecoverBatch: (queued) => {
      deps.metrics.webhookRecoverBatches.inc();
      deps.metrics.webhookRecovered.inc(queued);
    },
    now: deps.now,
  });
  return { webhooks, repo, deliveries: delivery.deliveries, job: delivery.job, nudge, close: delivery.close };
}

export type Webhooks = ReturnType<typeof createWebhooks>;

/** The end users' devices and the push notifications sent to them. */
export async function createPushes(config: Config, deps: Pick<WebhooksDeps, 'db' | 'logger' | 'metrics' | 'onStaleLease' | 'tracer' | 'now'>) {
  const devices = createDeviceService({ devices: createDeviceRepository(deps.db), now: deps.now });
  const repo = createPushDeliveryRepository(deps.db);
  const service = createPushDeliveryService({
    pushes: repo,
    sender: await createPushSender(config.fcm, { log: deps.logger, timeoutMs: config.webhookTimeoutMs, now: deps.now }),
    retryScheduleMs: config.webhookRetryScheduleMs,
    log: deps.logger,
    onStaleLease: deps.onStaleLease,
    onResult: (outcome) => deps.metrics.pushDeliveries.inc({ outcome }),
    tracer: deps.tracer,
    now: deps.now,
  });
  return { devices, repo, service };
}

export type Pushes = Awaited<ReturnType<typeof createPushes>>;
