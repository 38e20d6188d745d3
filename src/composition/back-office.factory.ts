import type { Logger as PinoLogger } from 'pino';
import type { Config } from '../config.js';
import type { Db } from '../db/database.js';
import { createReconciliationRepository, type ReconciliationRepository } from '../db/repositories/reconciliation.repository.js';
import { createAuditRepository } from '../db/repositories/audit.repository.js';
import { createPaymentSearchRepository } from '../db/repositories/payment-search.repository.js';
import { createPushDeliveryRepository } from '../db/repositories/push-delivery.repository.js';
import type { WebhookDeliveryRepository } from '../db/repositories/webhook-delivery.repository.js';
import type { MinistryAdapters } from '../adapters/ministry/ministry.types.js';
import { createReconciliationService } from '../services/reconciliation.service.js';
import { createBackOfficeService } from '../services/back-office.service.js';
import { createPartnerAdminService } from '../services/partner-admin.service.js';
import type { PartnerService } from '../services/partner.service.js';
import type { RateLimitService } from '../services/rate-limit/rate-limit.service.js';
import type { PaymentResolver } from '../services/payment-resolution.service.js';
import type { AdminServices } from '../admin-app.js';
import { clockTimeMinutes } from '../domain/finance-day.js';
import type { StaleLeaseReport } from '../domain/vocabulary.js';
import { leasePolicyOf } from './data.factory.js';
import type { Clock } from '../domain/clock.port.js';

export interface BackOfficeDeps {
  db: Db;
  logger: PinoLogger;
  ministries: MinistryAdapters;
  resolver: PaymentResolver;
  partners: PartnerService;
  deliveries: WebhookDeliveryRepository;
  /** Delivers queued webhook events now (a reconciliation's confirmations, an operator's redelivery). */
  nudgeWebhooks: () => void;
  onStaleLease: StaleLeaseReport;
  /** Wrong operator tokens per client address. */
  operatorAuthFailures: RateLimitService;
  now: Clock;
}

export interface BackOffice {
  /** The operator's services, on the admin listener. */
  admin: AdminServices;
  reconciliations: ReconciliationRepository;
}

/** The operator's side: partner management, payment search and redelivery, and the daily reconciliation. */
export function createBackOffice(config: Config, deps: BackOfficeDeps): BackOffice {
  const { db, now } = deps;
  const reconciliations = createReconciliationRepository(db);
  const audit = createAuditRepository(db);
  const settings = config.reconciliation;
  const reconciliation = createReconciliationService({
    reconciliations,
    ministries: deps.ministries,
    resolver: deps.resolver,
    audit,
    settings: { scheduleAtMinutes: clockTimeMinutes(settings.at), retryMs: settings.retryMs, leaseMs: leasePolicyOf(config).reconciliation, waitMs: settings.waitMs },
    log: deps.logger,
    now,
    onConfirmed: deps.nudgeWebhooks,
    onStaleLease: deps.onStaleLease,
  });
  const backOffice = createBackOfficeService({
    payments: createPaymentSearchRepository(db),
    deliveries: deps.deliveries,
    pushes: createPushDeliveryRepository(db),
    reconciliations,
    audit,
    now,
    onRedeliver: deps.nudgeWebhooks,
  });
  const admin: AdminServices = {
    partners: createPartnerAdminService({ partners: deps.partners, backOffice }),
    backOffice,
    reconciliation,
    authFailureLimiter: deps.operatorAuthFailures,
  };
  return { admin, reconciliations };
}
