import { pino, stdSerializers, type Logger as PinoLogger } from 'pino';
import { redactDbError } from '../http/db-error.redactor.js';
import type { Config } from '../config/config.js';
import { createDatabase, createDatabasePinger, migrateToLatest, pingDatabase, type DatabaseOptions, type Db, type EmbeddedDatabase } from '../db/database.js';
import { createDatabaseClock } from '../db/database-clock.js';
import { withDeadline } from '../primitives/deadline.helper.js';
import { systemClock, type Clock } from '../domain/clock.port.js';
import { createDatabaseOutage, type DatabaseOutage } from '../db/database-outage.monitor.js';
import { createWorkPriority, type WorkPriority } from '../db/work-priority.js';
import { createMetrics, type Metrics } from '../adapters/metrics.js';
import type { StaleLeaseReport } from '../domain/vocabulary.js';
import type { Tracer } from '../domain/tracer.port.js';
import { createLocalTracer } from '../adapters/tracing/local.tracer.js';
import { createLeasePolicy, type LeasePolicy } from '../domain/lease-policy.js';
import { createAsyncContext, type AsyncContext } from '../primitives/async-context.js';
import { createRepositories, type Repositories } from './repositories.factory.js';

export interface DataOptions {
  logger?: PinoLogger;
  /** PostgreSQL schema, for test isolation. */
  dbSchema?: string;
  /** An embedded database already started, used instead of starting one (DatabaseOptions.embedded). */
  embeddedDatabase?: EmbeddedDatabase;
  /** The process's tracer (tracing.loader.ts); by default the local one, which exports nothing. */
  tracer?: Tracer;
  /** The process's async context (startTracing), where the work priority keeps its mark; a new one when left out. */
  asyncContext?: AsyncContext;
  /** Replaces the database's clock everywhere: a test moves it forward. */
  testClock?: Clock;
}

/**
 * What every part of the service runs on, made once at start and handed down: the clock leases
 * and due times are compared on, the log, the metrics, the tracer and the lease lengths.
 */
export interface Runtime {
  /** The database's clock, the same for every instance (a test's own clock in tests). */
  now: Clock;
  logger: PinoLogger;
  metrics: Metrics;
  tracer: Tracer;
  /** Every lease length and pass deadline, derived from the deadlines of the work they cover. */
  leases: LeasePolicy;
  onStaleLease: StaleLeaseReport;
}

/** What every other area builds on: the runtime, a migrated database and its repositories. */
export interface Data {
  runtime: Runtime;
  db: Db;
  repos: Repositories;
  dbOutage: DatabaseOutage;
  /** Only on the embedded database: the partners' requests go before background work. */
  priority?: WorkPriority;
  /** Answers within READY_DB_TIMEOUT_MS, over a connection of its own on PostgreSQL. */
  isDbReady(): Promise<boolean>;
  close(): Promise<void>;
}

export function leasePolicyOf(config: Config): LeasePolicy {
  return createLeasePolicy({
    queryMs: config.dbQueryTimeoutMs,
    ministryMs: config.ministryTimeoutMs,
    webhookMs: config.webhookTimeoutMs,
    pushMs: config.webhookTimeoutMs,
    reconcileMs: config.reconciliation.leaseMs,
  });
}

export function createLogger(config: Config): PinoLogger {
  return pino({
    level: config.logLevel,
    redact: {
      paths: ['req.headers["x-api-key"]', 'req.headers.authorization', '*.secret', '*.apiKey', 'secret', 'apiKey'],
      censor: '[redacted]',
    },
    // Database errors hold the statement's bound values, wherever they are logged from.
    serializers: { err: (err: unknown) => stdSerializers.err(redactDbError(err) as Error) },
  });
}

function staleLeaseReport(metrics: Metrics, logger: PinoLogger): StaleLeaseReport {
  return (work, id) => {
    metrics.staleLeaseWrites.inc({ work });
    logger.warn({ work, id }, 'a holder that lost its lease tried to write; nothing was changed (another instance has the work)');
  };
}

/**
 * Readiness's ping: on PostgreSQL a connection of its own, which a pool full of queries waiting out
 * their deadline cannot hold up; on the embedded database the one connection, bounded in time.
 */
function readinessPing(config: Config, db: Db) {
  const timeoutMs = config.readyDbTimeoutMs;
  if (!config.databaseUrl) return { ping: () => withDeadline(pingDatabase(db), timeoutMs, () => false), close: async () => undefined };
  return createDatabasePinger({ url: config.databaseUrl, timeoutMs, keepAliveMs: config.dbKeepAliveMs });
}

/**
 * Migrations run on a connection of their own without the query deadline: a migration of a large
 * table may rightly take longer than any request's query. The embedded database has one connection.
 */
async function migrate(db: Db, options: DatabaseOptions): Promise<void> {
  if (!options.databaseUrl) return migrateToLatest(db, options.schema);
  const own = await createDatabase({ ...options, poolSize: 1, queryTimeoutMs: undefined, health: undefined });
  try {
    await migrateToLatest(own, options.schema);
  } finally {
    await own.destroy();
  }
}

export async function createData(config: Config, opts: DataOptions): Promise<Data> {
  const logger = opts.logger ?? createLogger(config);
  const metrics = createMetrics();
  const asyncContext = opts.asyncContext ?? createAsyncContext();
  const tracer = opts.tracer ?? createLocalTracer(asyncContext.slot());
  const priority = createWorkPriority(asyncContext.slot());
  // The ping is made once the database is: the embedded one pings through its only connection.
  const ready: { ping?: () => Promise<boolean> } = {};
  const dbOutage = createDatabaseOutage(logger, (down) => metrics.databaseUp.set(down ? 0 : 1), () => ready.ping?.() ?? Promise.resolve(false));
  const options: DatabaseOptions = {
    priority,
    databaseUrl: config.databaseUrl,
    dataDir: config.dataDir,
    embedded: opts.embeddedDatabase,
    schema: opts.dbSchema,
    connectTimeoutMs: config.dbConnectTimeoutMs,
    keepAliveMs: config.dbKeepAliveMs,
    queryTimeoutMs: config.dbQueryTimeoutMs,
    health: dbOutage,
    tracer,
    onConnectionError: (err) => {
      if (!dbOutage.absorb(err)) logger.warn({ err }, 'database connection failed');
    },
  };
  const db = await createDatabase(options);
  const ping = readinessPing(config, db);
  ready.ping = ping.ping;
  await migrate(db, options);
  const isDbReady = async () => {
    const ok = await ping.ping();
    if (ok) dbOutage.recovered();
    return ok;
  };
  const clock = config.databaseUrl ? await createDatabaseClock(db) : { now: systemClock, stop: () => undefined };
  const now = opts.testClock ?? clock.now;
  const runtime: Runtime = { now, logger, metrics, tracer, leases: leasePolicyOf(config), onStaleLease: staleLeaseReport(metrics, logger) };
  return {
    runtime,
    db,
    repos: createRepositories(config, db, now),
    dbOutage,
    priority,
    isDbReady,
    close: async () => {
      clock.stop();
      await ping.close();
      await db.destroy();
      // prom-client's default GC metric observes for the process's life and keeps its registry,
      // and through the gauges that read at scrape time, this database.
      metrics.registry.clear();
    },
  };
}
