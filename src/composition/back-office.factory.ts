import type { Config } from '../config/config.js';
import type { MinistryAdapters } from '../domain/ministry.port.js';
import { createReconciliationService } from '../services/reconciliation.service.js';
import { createBackOfficeService } from '../services/back-office.service.js';
import { createPartnerAdminService } from '../services/partner-admin.service.js';
import type { PartnerService } from '../services/partner.service.js';
import type { RateLimitService } from '../services/rate-limit/rate-limit.service.js';
import type { PaymentResolver } from '../payments/payments.module.js';
import type { AdminServices } from '../admin-app.js';
import type { CaseService } from '../services/case.service.js';
import { clockTimeMinutes } from '../domain/finance-day.js';
import type { Repositories } from './repositories.factory.js';
import type { Runtime } from './data.factory.js';

export interface BackOfficeDeps {
  repos: Pick<Repositories, 'reconciliations' | 'audit' | 'paymentSearch' | 'webhookDeliveries' | 'pushDeliveries'>;
  ministries: MinistryAdapters;
  resolver: PaymentResolver;
  partners: PartnerService;
  /** Delivers queued webhook events now (a reconciliation's confirmations, an operator's redelivery). */
  nudgeWebhooks: () => void;
  /** Wrong operator tokens per client address. */
  operatorAuthFailures: RateLimitService;
  /** Partners' cases (composition/cases.factory.ts): the operator's queue. */
  cases: CaseService;
}

/** The operator's side: partner management, payment search and redelivery, and the daily reconciliation. */
export function createBackOffice(config: Config, runtime: Runtime, deps: BackOfficeDeps): AdminServices {
  const { repos } = deps;
  const settings = config.reconciliation;
  const reconciliation = createReconciliationService({
    reconciliations: repos.reconciliations,
    ministries: deps.ministries,
    resolver: deps.resolver,
    audit: repos.audit,
    settings: { scheduleAtMinutes: clockTimeMinutes(settings.at), retryMs: settings.retryMs, leaseMs: runtime.leases.reconciliation, waitMs: settings.waitMs },
    log: runtime.logger,
    now: runtime.now,
    onConfirmed: deps.nudgeWebhooks,
    onStaleLease: runtime.onStaleLease,
  });
  const backOffice = createBackOfficeService({
    payments: repos.paymentSearch,
    deliveries: repos.webhookDeliveries,
    pushes: repos.pushDeliveries,
    reconciliations: repos.reconciliations,
    audit: repos.audit,
    now: runtime.now,
    onRedeliver: deps.nudgeWebhooks,
  });
  return {
    partners: createPartnerAdminService({ partners: deps.partners, backOffice }),
    backOffice,
    reconciliation,
    authFailureLimiter: deps.operatorAuthFailures,
    cases: deps.cases,
  };
}
