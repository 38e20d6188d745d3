import type { Config } from '../config/config.js';
import type { Db } from '../db/database.js';
import type { Clock } from '../domain/clock.port.js';
import { createCaseRepository } from '../db/repositories/case.repository.js';
import { createAuditRepository } from '../db/repositories/audit.repository.js';
import { createCounterRepository } from '../db/repositories/counter.repository.js';
import { createDeliveryLogRepository } from '../db/repositories/delivery-log.repository.js';
import { createDeviceRepository } from '../db/repositories/device.repository.js';
import { createEventLogRepository } from '../db/repositories/event-log.repository.js';
import { createOutbox } from '../db/outbox.statements.js';
import { createIdempotencyRepository } from '../db/repositories/idempotency.repository.js';
import { createInvoiceRepository } from '../db/repositories/invoice.repository.js';
import { createPartnerRepository } from '../db/repositories/partner.repository.js';
import { createPaymentSearchRepository } from '../db/repositories/payment-search.repository.js';
import { createMinistryCancellationRepository, createPaymentRepository } from '../payments/payments.module.js';
import { createPushDeliveryRepository } from '../db/repositories/push-delivery.repository.js';
import { createReconciliationRepository } from '../db/repositories/reconciliation.repository.js';
import { createReportRepository } from '../db/repositories/report.repository.js';
import { createRetentionRepository } from '../db/repositories/retention.repository.js';
import { createPartitionRepository } from '../db/repositories/partition.repository.js';
import { createShortLinkRepository } from '../db/repositories/short-link.repository.js';
import { createWebhookDeliveryRepository } from '../db/repositories/webhook-delivery.repository.js';
import { createWebhookRepository } from '../db/repositories/webhook.repository.js';

/**
 * Every repository of the service, each built once here on the one database and the runtime's
 * clock; the areas take the ones they use from this object.
 */
/** `reads`: the database of the reads that may run on a replica (createReplicaReads), or the database itself. */
export function createRepositories(config: Config, db: Db, now: Clock, reads: Db = db) {
  /** The outbox writes that ride in the statements moving a payment or a case; a first attempt waits the schedule's head. */
  const events = createOutbox({ now, firstAttemptDelayMs: config.webhookRetryScheduleMs[0] });
  return {
    cases: createCaseRepository(db, events, reads),
    audit: createAuditRepository(db, reads),
    counters: createCounterRepository(db),
    deliveryLog: createDeliveryLogRepository(db),
    devices: createDeviceRepository(db),
    eventLog: createEventLogRepository(db, { reads }),
    events,
    idempotency: createIdempotencyRepository(db),
    invoices: createInvoiceRepository(db, now),
    ministryCancellations: createMinistryCancellationRepository(db),
    partners: createPartnerRepository(db, now),
    paymentSearch: createPaymentSearchRepository(reads),
    payments: createPaymentRepository(db, now, reads),
    pushDeliveries: createPushDeliveryRepository(db),
    reconciliations: createReconciliationRepository(db, reads),
    reports: createReportRepository(reads),
    retention: createRetentionRepository(db),
    partitions: createPartitionRepository(db),
    shortLinks: createShortLinkRepository(db),
    webhookDeliveries: createWebhookDeliveryRepository(db, reads),
    webhooks: createWebhookRepository(db),
  };
}

export type Repositories = ReturnType<typeof createRepositories>;
