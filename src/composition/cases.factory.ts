import type { Config } from '../config/config.js';
import type { MinistryAdapters } from '../domain/ministry.port.js';
import { createCaseService, type CaseService } from '../services/case.service.js';
import { createCaseJob, type CaseJob } from '../jobs/case.job.js';
import type { CasePayments, PaymentResolver } from '../payments/payments.module.js';
import type { Repositories } from './repositories.factory.js';
import type { Runtime } from './data.factory.js';

export interface CasesDeps {
  repos: Pick<Repositories, 'cases' | 'paymentSearch' | 'reconciliations' | 'audit'> & { payments: CasePayments };
  ministries: MinistryAdapters;
  resolver: PaymentResolver;
  /** Delivers queued webhook events now. */
  nudgeWebhooks: () => void;
}

/** Partners' cases: the service both listeners use, and the job that gathers evidence and escalates. */
export function createCases(config: Config, runtime: Runtime, deps: CasesDeps): { service: CaseService; job: CaseJob } {
  const { repos } = deps;
  let job: CaseJob | null = null;
  const service = createCaseService({
    cases: repos.cases,
    payments: repos.payments,
    resolver: deps.resolver,
    ministries: deps.ministries,
    timelines: repos.paymentSearch,
    discrepancies: repos.reconciliations,
    audit: repos.audit,
    turnaroundHours: config.caseTurnaroundHours,
    evidenceLeaseMs: runtime.leases.caseEvidence,
    log: runtime.logger,
    now: runtime.now,
    // An API-only process leaves the evidence to a worker's next pass (CASE_POLL_MS).
    onOpened: () => {
      if (config.processRole !== 'api') job?.nudge();
    },
    onChanged: deps.nudgeWebhooks,
    onEscalated: (type) => runtime.metrics.caseEscalations.inc({ type }),
    onStaleLease: runtime.onStaleLease,
  });
  job = createCaseJob({ service, intervalMs: config.casePollMs, deadlineMs: runtime.leases.passes.cases, log: runtime.logger });
  return { service, job };
}
