import type { Config } from '../config/config.js';
import type { ReconciliationService } from '../services/reconciliation.service.js';
import { createWebhookHealthJob } from '../jobs/webhook-health.job.js';
import { createRetentionSweepJob } from '../jobs/retention-sweep.job.js';
import { createCounterRollupJob } from '../jobs/counter-rollup.job.js';
import { createReconciliationJob } from '../jobs/reconciliation.job.js';
import { createPushDeliveryJob } from '../jobs/push-delivery.job.js';
import { createEventPositionJob } from '../jobs/event-position.job.js';
import { startJobs, type Job, type RunningJobs } from '../work/job-runner.js';
import { createWorkHealth, type WorkHealth } from '../work/work-health.monitor.js';
import type { Data, Runtime } from './data.factory.js';
import type { Payments } from './payments.factory.js';
import type { Pushes, Webhooks } from './webhooks.factory.js';

export interface JobsDeps {
  data: Pick<Data, 'repos' | 'dbOutage'>;
  payments: Pick<Payments, 'module'>;
  /** The webhook delivery job is built with the webhooks, whose nudge drives it. */
  webhooks: Pick<Webhooks, 'job'>;
  pushes: Pushes;
  reconciliation: ReconciliationService;
  /** Built with the cases, whose opening nudges it. */
  cases: Job;
}

/** Every background job, in the order the runner starts them. */
export function createJobs(config: Config, runtime: Runtime, deps: JobsDeps): Job[] {
  const { logger: log, now, leases } = runtime;
  const { repos, dbOutage: outage } = deps.data;
  const deadlines = leases.passes;
  return [
    deps.payments.module.confirmationJob,
    deps.webhooks.job,
    createWebhookHealthJob({
      webhooks: repos.webhooks,
      disableAfterMs: config.webhookDisableAfterMs,
      intervalMs: config.webhookHealthCheckMs,
      deadlineMs: deadlines.webhookHealth,
      log,
      now,
    }),
    createRetentionSweepJob({ idempotency: repos.idempotency, retention: repos.retention, partitions: repos.partitions, settings: config.retention, deadlineMs: deadlines.retention, log, now }),
    createCounterRollupJob({ counters: repos.counters, settings: config.counterRollup, deadlineMs: deadlines.counterRollup, log }),
    createEventPositionJob({ events: repos.eventLog, intervalMs: config.eventPositionMs, deadlineMs: deadlines.eventPositions }),
    createReconciliationJob({ service: deps.reconciliation, intervalMs: config.reconciliation.pollMs, deadlineMs: deadlines.reconciliation }),
    deps.cases,
    createPushDeliveryJob({
      pushes: repos.pushDeliveries,
      service: deps.pushes.service,
      intervalMs: config.webhookPollMs,
      leaseMs: leases.push,
      passDeadlineMs: deadlines.pushes,
      limits: { total: config.webhookConcurrency.total, perPartner: config.webhookConcurrency.perPartner },
      log,
      outage,
      now,
    }),
  ];
}

/** Starts the jobs (any number of times) and stops every start of them at shutdown; `health` watches them. */
export function jobControl(jobs: Job[], runtime: Runtime, data: Pick<Data, 'dbOutage' | 'priority'>) {
  const running = new Set<RunningJobs>();
  const health: WorkHealth = createWorkHealth({ log: runtime.logger, onAbandoned: (work) => runtime.metrics.workPassAbandoned.inc({ work }) });
  runtime.metrics.observeStalledWork(() => health.stalled(), jobs.map((j) => j.name));
  return {
    health,
    start(): RunningJobs {
      const started = startJobs(jobs, runtime.logger, { outage: data.dbOutage, priority: data.priority, health });
      running.add(started);
      return started;
    },
    async stopAll(): Promise<void> {
      await Promise.allSettled([...running].map((r) => r.stop()));
    },
  };
}
