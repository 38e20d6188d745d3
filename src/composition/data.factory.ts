import { pino, stdSerializers, type DestinationStream, type Logger as PinoLogger } from 'pino';
import { prettyFactory } from 'pino-pretty';
import { redactDbError } from '../http/db-error.redactor.js';
import type { Config, DatabaseConfig } from '../config/config.js';
import {
  createDatabase,
  createDatabasePinger,
  migrateToLatest,
  pingDatabase,
  readSchemaState,
  type DatabaseOptions,
  type Db,
  type EmbeddedDatabase,
  type MigrationStarted,
  type SchemaState,
} from '../db/database.js';
import { StartRefusal } from '../config/start-failure.js';
import { stdoutIsTerminal } from '../config/process-env.js';
import { createDatabaseClock } from '../db/database-clock.js';
import { createReplicaReads, type ReplicaReads } from '../db/replica-reads.js';
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

/**
 * The process's log, on stdout unless `destination` says otherwise: JSON lines (LOG_FORMAT=json),
 * or pino-pretty's lines for a person at a terminal (LOG_FORMAT=pretty). Either way the same
 * redaction applies: pino redacts before the line is formatted.
 */
export function createLogger(config: Pick<Config, 'logLevel' | 'logFormat'>, destination?: DestinationStream): PinoLogger {
  const options = {
    level: config.logLevel,
    redact: {
      paths: ['req.headers["x-api-key"]', 'req.headers.authorization', '*.secret', '*.apiKey', 'secret', 'apiKey'],
      censor: '[redacted]',
    },
    // Database errors hold the statement's bound values, wherever they are logged from.
    serializers: { err: (err: unknown) => stdSerializers.err(redactDbError(err) as Error) },
  };
  if (config.logFormat === 'json') return destination ? pino(options, destination) : pino(options);
  // Formatted as each line is written, in this thread (pino-pretty's own stream formats later, on
  // its own turns): a line logged just before the process exits is not lost.
  const format = prettyFactory({ colorize: !destination && stdoutIsTerminal(), translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname' });
  const out = destination ?? process.stdout;
  return pino(options, { write: (line: string) => void out.write(format(line)) });
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

/** The command that applies a release's migrations, as a refusal names it. */
export const MIGRATE_COMMAND = '`npm run migrate` (in the image: node dist/src/bin/migrate.js)';

/** The last of the code's migrations the database has had, or null for a database never migrated. */
function reached(state: SchemaState): string | null {
  const pending = new Set(state.pending);
  return state.known.filter((n) => !pending.has(n)).at(-1) ?? null;
}

/**
 * A database whose record and the code's differ both ways (a migration of another branch, or a
 * release's migration renamed): neither is older, Kysely refuses to migrate it, and no rule says
 * this code runs on it.
 */
function divergence(state: SchemaState): string | null {
  if (state.unknown.length === 0 || state.pending.length === 0) return null;
  return `the database has migrations this code does not (${state.unknown.join(', ')}) and lacks some it has (${state.pending.join(', ')}); it was migrated by another line of releases`;
}

/**
 * Migrations run on a connection of their own without the query deadline: a migration of a large
 * table may rightly take longer than any request's query. The embedded database has one connection.
 */
async function migrate(db: Db, options: DatabaseOptions, started?: MigrationStarted): Promise<string[]> {
  if (!options.databaseUrl) return migrateToLatest(db, options.schema, undefined, started);
  const own = await createDatabase({ ...options, poolSize: 1, queryTimeoutMs: undefined, health: undefined });
  try {
    return await migrateToLatest(own, options.schema, undefined, started);
  } finally {
    await own.destroy();
  }
}

/**
 * The schema the service is to run on. With MIGRATE_ON_START it applies what is pending; without,
 * a schema older than the code refuses the start, naming the migrations and the command. A schema
 * newer than the code (a later release migrated it, or this release was rolled back to) is served
 * as it is, with a warning, under either: each migration only adds, so this code's tables and
 * columns are all there (docs/deployment.md, Migrations). Kysely would refuse to migrate it.
 */
async function prepareSchema(db: Db, options: DatabaseOptions, config: Config, logger: PinoLogger): Promise<void> {
  const state = await readSchemaState(db, options.schema);
  const diverged = divergence(state);
  if (diverged) throw new StartRefusal(diverged);
  if (state.unknown.length > 0) {
    logger.warn(
      { unknownMigrations: state.unknown, codeMigration: state.known.at(-1) },
      'the database schema is newer than this code (migrations it does not have); serving on it, as each migration only adds',
    );
    return;
  }
  if (state.pending.length === 0 && state.unpartitioned.length === 0) return;
  if (!config.migrateOnStart) {
    const missing = state.pending.length > 0 ? `migration${state.pending.length > 1 ? 's' : ''} ${state.pending.join(', ')} not applied` : `${state.unpartitioned.join(', ')} not yet partitioned by month`;
    throw new StartRefusal(`the database schema is older than this code: ${missing}; run ${MIGRATE_COMMAND} first, or set MIGRATE_ON_START=true`);
  }
  const from = reached(state);
  const range = state.pending.length > 0 ? `${state.pending[0]} to ${state.pending.at(-1)}` : `partitioning ${state.unpartitioned.join(', ')} by month`;
  logger.info({ from, pending: state.pending.length }, from ? `migrating the database from ${from}: ${range}` : `migrating a new database: ${state.pending.length} migrations, ${range}`);
  // A new database takes every migration within a second or two: its one line says so, and each is debug.
  const level = from ? 'info' : 'debug';
  await migrate(db, options, (name) => logger[level]({ migration: name }, `applying migration ${name}`));
}

/** What the migration step did: the migrations it applied, and where the database is now. */
export interface MigrationOutcome {
  applied: string[];
  /** The code's last migration the database has had (null: the code has none). */
  at: string | null;
  /** Migrations the database has had that this code does not: a newer release migrated it. */
  newer: string[];
}

/**
 * The deploy step (`npm run migrate`): the database of DATABASE_URL, or the embedded one in
 * DATA_DIR, migrated to this code's last migration. A database a newer release migrated is left
 * as it is: this release's code runs on it (a rollback), and it has nothing of this release to apply.
 */
export async function migrateDatabase(config: DatabaseConfig, started?: MigrationStarted): Promise<MigrationOutcome> {
  const options: DatabaseOptions = { databaseUrl: config.databaseUrl, dataDir: config.dataDir, connectTimeoutMs: config.dbConnectTimeoutMs, keepAliveMs: config.dbKeepAliveMs, poolSize: 1 };
  const db = await createDatabase(options);
  try {
    const state = await readSchemaState(db);
    const diverged = divergence(state);
    if (diverged) throw new StartRefusal(diverged);
    const applied = state.pending.length > 0 || state.unpartitioned.length > 0 ? await migrateToLatest(db, undefined, undefined, started) : [];
    return { applied, at: state.known.at(-1) ?? null, newer: state.unknown };
  } finally {
    await db.destroy();
  }
}

/** Replica connections a process keeps: the routed reads are the heavy, rarer ones. */
const REPLICA_POOL_SIZE = 5;

/** The routed reads on DATABASE_REPLICA_URL beside PostgreSQL at DATABASE_URL; none without both. */
async function replicaReadsOf(config: Config, primary: Db, options: DatabaseOptions, runtime: Runtime): Promise<ReplicaReads | null> {
  if (!config.databaseUrl || !config.databaseReplicaUrl) return null;
  const { logger, metrics } = runtime;
  const replica = await createDatabase({
    databaseUrl: config.databaseReplicaUrl,
    dataDir: config.dataDir,
    schema: options.schema,
    standby: true,
    poolSize: REPLICA_POOL_SIZE,
    connectTimeoutMs: config.dbConnectTimeoutMs,
    keepAliveMs: config.dbKeepAliveMs,
    queryTimeoutMs: config.dbQueryTimeoutMs,
    onConnectionError: (err) => logger.warn({ err }, 'replica connection failed'),
  });
  return createReplicaReads({
    primary,
    replica,
    maxLagMs: config.replicaMaxLagMs,
    probeMs: config.replicaProbeMs,
    log: logger,
    onRead: (target) => metrics.routedReads.inc({ target }),
    onLag: (lagMs) => metrics.replicaLag.set(lagMs === null ? -1 : lagMs / 1000),
  });
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
  await prepareSchema(db, options, config, logger);
  const isDbReady = async () => {
    const ok = await ping.ping();
    if (ok) dbOutage.recovered();
    return ok;
  };
  const clock = config.databaseUrl ? await createDatabaseClock(db) : { now: systemClock, stop: () => undefined };
  const now = opts.testClock ?? clock.now;
  const runtime: Runtime = { now, logger, metrics, tracer, leases: leasePolicyOf(config), onStaleLease: staleLeaseReport(metrics, logger) };
  const replica = await replicaReadsOf(config, db, options, runtime);
  return {
    runtime,
    db,
    repos: createRepositories(config, db, now, replica?.reads ?? db),
    dbOutage,
    priority,
    isDbReady,
    close: async () => {
      clock.stop();
      await replica?.stop();
      await ping.close();
      await db.destroy();
      // prom-client's default GC metric observes for the process's life and keeps its registry,
      // and through the gauges that read at scrape time, this database.
      metrics.registry.clear();
    },
  };
}
