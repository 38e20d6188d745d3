import type { Tracer } from '../domain/tracer.port.js';
import type { AsyncContext } from '../primitives/async-context.js';
import type { Logger as PinoLogger } from 'pino';
import type { Config } from '../config/config.js';
import type { Db, EmbeddedDatabase } from '../db/database.js';
import type { DatabaseOutage } from '../db/database-outage.monitor.js';
import type { RequestActivity } from '../http/plugins/request-activity.plugin.js';
import type { Metrics } from '../adapters/metrics.js';
import type { MinistryAdapters } from '../domain/ministry.port.js';
import type { Source } from '../domain/vocabulary.js';
import type { Clock } from '../domain/clock.port.js';
import type { Job, RunningJobs } from '../work/job-runner.js';
import type { AdminServices } from '../admin-app.js';
import type { AppServices } from '../app.js';
import { createData, type DataOptions, type Runtime } from './data.factory.js';
import { createMinistries } from './ministries.factory.js';
import { createPayments } from './payments.factory.js';
import { createAccess } from './access.factory.js';
import { createPushes, createWebhooks } from './webhooks.factory.js';
import { createBackOffice } from './back-office.factory.js';
import { createCases } from './cases.factory.js';
import { observeBacklogs } from './metrics.factory.js';
import { createJobs, jobControl } from './jobs.factory.js';
import { createShutdown } from './shutdown.factory.js';

export { createLogger } from './data.factory.js';


export interface Deps {
  config: Config;
  /** The clock, log, metrics, tracer and lease policy every part was built on. */
  runtime: Runtime;
  logger: PinoLogger;
  db: Db;
  ministries: MinistryAdapters;
  metrics: Metrics;
  services: AppServices;
  /** The operator's services, on the admin listener. */
  admin: AdminServices;
  isDbReady: () => Promise<boolean>;
  /** Background loops that have completed no pass for 3 × their interval (shown by readiness). */
  stalledWork: () => string[];
  /** Whether the database is away as this process last saw it; logs an outage once. */
  dbOutage: DatabaseOutage;
  /** Background jobs (confirmation poller, webhook delivery, retention sweep); tests run their passes directly. */
  jobs: Job[];
  startJobs(): RunningJobs;
  /** On the embedded database: the partner API tells it which requests are being served, so background work waits for the time between them. */
  requestActivity?: RequestActivity;
  tracer: Tracer;
  close(): Promise<void>;
}

export interface DepsOptions {
  /** Resolved upstream base URLs (the built-in simulator's when the config leaves them unset). */
  ministryUrls: Record<Source, string>;
  logger?: PinoLogger;
  /** PostgreSQL schema, for test isolation. */
  dbSchema?: string;
  /** Replaces the database's clock everywhere, the rate limiters' too: a test moves it forward. */
  testClock?: DataOptions['testClock'];
  /** Rate-limiter clock in epoch ms; defaults to `testClock`, else Date.now (memory) or the Redis server clock. */
  rateLimitClock?: () => number;
  /** Put before the rate limiters' Redis keys: a test that moves their clock keeps its own counts. */
  rateLimitNamespace?: string;
  /** An embedded database already started, used instead of starting one (tests reuse them). */
  embeddedDatabase?: EmbeddedDatabase;
  /** The process's tracer (startTracing); by default the local one: trace contexts, nothing exported. */
  tracer?: Tracer;
  /** The process's async context (startTracing), which the tracer's contexts share; a new one when left out. */
  asyncContext?: AsyncContext;
}

function epochMs(clock: Clock | undefined): (() => number) | undefined {
  return clock ? () => clock().getTime() : undefined;
}

/**
 * Plain factories wired by hand, one area after the other in the order they depend on each
 * other: the runtime and the repositories are made once, and every dependency is explicit.
 */
export async function createDeps(config: Config, opts: DepsOptions): Promise<Deps> {
  const data = await createData(config, opts);
  const { runtime, repos, db } = data;
  const ministries = createMinistries(config, runtime, opts.ministryUrls);
  const checks = { limits: ministries.confirmLimits, slots: ministries.checkSlots };
  // Before the payments: a check that resolves a payment has its webhook delivered at once.
  const webhooks = createWebhooks(config, runtime, data);
  const payments = await createPayments(config, runtime, { repos, ministries: ministries.ministries, checks, outage: data.dbOutage, onResolved: () => webhooks.job.nudge(), ministryUrls: opts.ministryUrls });
  // The rate limits keep Redis's own clock (shared by every instance) unless a test sets one.
  const access = await createAccess(config, runtime, { repos, rateLimitClock: opts.rateLimitClock ?? epochMs(opts.testClock), rateLimitNamespace: opts.rateLimitNamespace });
  const pushes = await createPushes(config, runtime, repos);
  const cases = createCases(config, runtime, { repos, ministries: ministries.ministries, resolver: payments.module.resolver, nudgeWebhooks: webhooks.nudge });
  const services: AppServices = {
    ...payments.services,
    partners: access.partners,
    rateLimiter: access.rateLimiters.perKey,
    authFailureLimiter: access.rateLimiters.authFailures,
    shortLinkLimiter: access.rateLimiters.shortLinks,
    webhooks: webhooks.webhooks,
    devices: pushes.devices,
    cases: cases.service,
  };
  const admin = createBackOffice(config, runtime, {
    repos,
    ministries: ministries.ministries,
    resolver: payments.module.resolver,
    partners: access.partners,
    operatorAuthFailures: access.rateLimiters.operatorAuthFailures,
    nudgeWebhooks: webhooks.nudge,
    cases: cases.service,
  });
  observeBacklogs(runtime.metrics, repos, runtime.now);
  const jobs = createJobs(config, runtime, { data, payments, webhooks, pushes, reconciliation: admin.reconciliation, cases: cases.job });
  const control = jobControl(jobs, runtime, data);
  return {
    config,
    runtime,
    logger: runtime.logger,
    db,
    ministries: ministries.ministries,
    metrics: runtime.metrics,
    services,
    admin,
    isDbReady: data.isDbReady,
    stalledWork: () => control.health.stalled(),
    dbOutage: data.dbOutage,
    jobs,
    startJobs: control.start,
    requestActivity: data.priority,
    tracer: runtime.tracer,
    close: createShutdown(control.stopAll, [() => cases.job.stop(), ministries.close, () => access.rateLimiters.close(), payments.close, webhooks.close, data.close]),
  };
}
