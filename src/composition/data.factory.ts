import { pino, stdSerializers, type Logger as PinoLogger } from 'pino';
import { redactDbError } from '../http/db-error.redactor.js';
import type { Config } from '../config.js';
import { createDatabase, migrateToLatest, pingDatabase, type Db } from '../db/database.js';
import { createDatabaseOutage, type DatabaseOutage } from '../db/database-outage.monitor.js';
import { createWorkPriority, type WorkPriority } from '../db/work-priority.js';
import { createMetrics, type Metrics } from '../adapters/metrics.js';
import type { StaleLeaseReport } from '../domain/vocabulary.js';
import { createLeasePolicy, type LeasePolicy } from '../domain/lease-policy.js';

export interface DataOptions {
  logger?: PinoLogger;
  /** PostgreSQL schema, for test isolation. */
  dbSchema?: string;
  /** An in-memory PGlite starts from this image of a database. */
  databaseImage?: Blob;
}

/** What every other area builds on: the log, the metrics and a migrated database. */
export interface Data {
  logger: PinoLogger;
  metrics: Metrics;
  dbOutage: DatabaseOutage;
  /** Only on the embedded database: the partners' requests go before background work. */
  priority?: WorkPriority;
  db: Db;
  isDbReady(): Promise<boolean>;
  onStaleLease: StaleLeaseReport;
  /** Every lease length and pass deadline, derived from the deadlines of the work they cover. */
  leases: LeasePolicy;
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

export async function createData(config: Config, opts: DataOptions): Promise<Data> {
  const logger = opts.logger ?? createLogger(config);
  const metrics = createMetrics();
  const dbOutage = createDatabaseOutage(logger, (down) => metrics.databaseUp.set(down ? 0 : 1));
  // Only the embedded database has one connection to share; elsewhere the async context tracking
  // would cost every request its promise hooks for nothing.
  const priority = config.databaseUrl ? undefined : createWorkPriority();
  const db = await createDatabase({
    priority,
    databaseUrl: config.databaseUrl,
    dataDir: config.dataDir,
    image: opts.databaseImage,
    schema: opts.dbSchema,
    connectTimeoutMs: config.dbConnectTimeoutMs,
    onConnectionError: (err) => {
      if (!dbOutage.absorb(err)) logger.warn({ err }, 'database connection failed');
    },
  });
  await migrateToLatest(db, opts.dbSchema);
  const isDbReady = async () => {
    const ok = await pingDatabase(db);
    if (ok) dbOutage.recovered();
    return ok;
  };
  return { logger, metrics, dbOutage, priority, db, isDbReady, onStaleLease: staleLeaseReport(metrics, logger), leases: leasePolicyOf(config), close: () => db.destroy() };
}
