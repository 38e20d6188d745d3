import type { Config } from '../config.js';
import { createRetentionRepository } from '../db/repositories/retention.repository.js';
import { createCounterRepository } from '../db/repositories/counter.repository.js';
import { createEventLogRepository } from '../db/repositories/event-log.repository.js';
import type { ReconciliationService } from '../services/reconciliation.service.js';
import { createPaymentConfirmationJob } from '../jobs/payment-confirmation.job.js';
import { createWebhookHealthJob } from '../jobs/webhook-health.job.js';
import { createRetentionSweepJob } from '../jobs/retention-sweep.job.js';
import { createCounterRollupJob } from '../jobs/counter-rollup.job.js';
import { createReconciliationJob } from '../jobs/reconciliation.job.js';
import { createPushDeliveryJob } from '../jobs/push-delivery.job.js';
import { createEventPositionJob } from '../jobs/event-position.job.js';
import { startJobs, type Job, type RunningJobs } from '../jobs/job-runner.js';
import { createWorkHealth, type WorkHealth } from '../work/work-health.monitor.js';
import type { AdaptiveLimit } from '../domain/adaptive-limit.js';
import type { KeyedSlots } from '../work/keyed-slots.js';
import type { Source } from '../domain/vocabulary.js';
import type { Clock } from '../domain/clock.port.js';
import type { Data } from './data.factory.js';
import type { Payments } from './payments.factory.js';
import type { Pushes, Webhooks } from './webhooks.factory.js';

export interface JobsDeps {
  data: Pick<Data, 'db' | 'logger' | 'metrics' | 'dbOutage' | 'onStaleLease' | 'leases' | 'tracer'>;
  payments: Pick<Payments, 'stores' | 'flow' | 'idempotency'>;
  confirmLimits: Record<Source, AdaptiveLimit>;
  /** The status-check slots within those limits, shared with the partners' live reads. */
  checkSlots: KeyedSlots;
  /** The webhook delivery job is built with the webhooks, whose nudge drives it. */
  webhooks: Pick<Webhooks, 'job' | 'repo'>;
  pushes: Pushes;
  reconciliation: ReconciliationService;
  now: Clock;
}

function confirmationJob(config: Config, deps: JobsDeps): Job {
  const { data, payments, webhooks } = deps;
  return createPaymentConfirmationJob({
    payments: payments.stores.payments,
    cancellations: payments.flow.cancellations,
    resolver: payments.flow.resolver,
    ministryCancellation: payments.flow.ministryCancellation,
    schedule: payments.flow.schedule,
    limits: deps.confirmLimits,
    slots: deps.checkSlots,
    maxPerSource: config.confirmConcurrencyMaxPerSource,
    onLimit: (source, limit) => data.metrics.ministryConcurrencyLimit.set({ source }, limit),
    leaseMs: data.leases.confirmation,
    passDeadlineMs: data.leases.passes.confirmation,
    log: data.logger,
    outage: data.dbOutage,
    onStaleLease: data.onStaleLease,
    now: deps.now,
    tracer: data.tracer,
    onResolved: () => webhooks.job.nudge(),
  });
}

function pushJob(config: Config, deps: JobsDeps): Job {
  return createPushDeliveryJob({
    pushes: deps.pushes.repo,
    service: deps.pushes.service,
    intervalMs: config.webhookPollMs,
    leaseMs: deps.data.leases.push,
    passDeadlineMs: deps.data.leases.passes.pushes,
    limits: { total: config.webhookConcurrency.total, perPartner: config.webhookConcurrency.perPartner },
    log: deps.data.logger,
    outage: deps.data.dbOutage,
    now: deps.now,
  });
}

/** Every background job, in the order the runner starts them. */
export function createJobs(config: Config, deps: JobsDeps): Job[] {
  const { db, logger: log } = deps.data;
  const now = deps.now;
  const deadlines = deps.data.leases.passes;
  return [
    confirmationJob(config, deps),
    deps.webhooks.job,
    createWebhookHealthJob({
      webhooks: deps.webhooks.repo,
      disableAfterMs: config.webhookDisableAfterMs,
      intervalMs: config.webhookHealthCheckMs,
      deadlineMs: deadlines.webhookHealth,
      log,
      now,
    }),
    createRetentionSweepJob({ idempotency: deps.payments.idempotency, retention: createRetentionRepository(db), settings: config.retention, deadlineMs: deadlines.retention, log, now }),
    createCounterRollupJob({ counters: createCounterRepository(db), settings: config.counterRollup, deadlineMs: deadlines.counterRollup, log }),
    createEventPositionJob({ events: createEventLogRepository(db), intervalMs: config.eventPositionMs, deadlineMs: deadlines.eventPositions }),
    createReconciliationJob({ service: deps.reconciliation, intervalMs: config.reconciliation.pollMs, deadlineMs: deadlines.reconciliation }),
    pushJob(config, deps),
  ];
}

/** Starts the jobs (any number of times) and stops every start of them at shutdown; `health` watches them. */
export function jobControl(jobs: Job[], data: Pick<Data, 'logger' | 'dbOutage' | 'priority' | 'metrics'>) {
  const running = new Set<RunningJobs>();
  const health: WorkHealth = createWorkHealth({ log: data.logger, onAbandoned: (work) => data.metrics.workPassAbandoned.inc({ work }) });
  data.metrics.observeStalledWork(() => health.stalled(), jobs.map((j) => j.name));
  return {
    health,
    start(): RunningJobs {
      const started = startJobs(jobs, data.logger, { outage: data.dbOutage, priority: data.priority, health });
      running.add(started);
      return started;
    },
    async stopAll(): Promise<void> {
      await Promise.allSettled([...running].map((r) => r.stop()));
    },
  };
}
