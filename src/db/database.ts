import { readdir } from 'node:fs/promises';
import { PGlite } from '@electric-sql/pglite';
import { Kysely, Migrator, PostgresDialect, sql, type Dialect, type Migration, type MigrationProvider } from 'kysely';
import { PGliteDialect } from 'kysely-pglite-dialect';
import pg from 'pg';
import type { Database } from './db.types.js';
import { movePartitionedTables, unpartitionedTables } from './partition-move.js';
import { pgErrorCode } from './pg-error.js';
import { requestsFirst } from './requests-first.driver.js';
import { requestsFirstPool } from './requests-first-pool.driver.js';
import { initializeEmbeddedCluster, initializeEmbeddedClusterOnDisk, isInMemory } from './embedded-cluster.initializer.js';
import { tracedDialect } from './traced.driver.js';
import type { Tracer } from '../domain/tracer.port.js';
import type { WorkPriority } from './work-priority.js';
import { withDeadline } from '../primitives/deadline.helper.js';
import { createStatementNamer, preparedStatementPool, type DatabaseHealth } from './prepared-statement.pool.js';

export type Db = Kysely<Database>;

export interface DatabaseOptions {
  databaseUrl: string | null;
  dataDir: string;
  /** PostgreSQL schema to use (tests isolate runs with a fresh schema); created when missing. */
  schema?: string;
  /** A read-only standby: its schema is the primary's, so none is created. */
  standby?: boolean;
  poolSize?: number;
  /**
   * How long a query waits for a connection (a new one to be made, or a busy pool to free one)
   * before it fails: bounds how long a request takes to learn the database is unreachable.
   */
  connectTimeoutMs?: number;
  /**
   * A connection failed (PostgreSQL restarted or failed over, its backend was terminated, the
   * network was cut), idle in the pool or checked out; the pool drops it and makes a new one.
   */
  onConnectionError?: (err: Error) => void;
  /**
   * PostgreSQL only: a query not answered within this fails as "database unavailable" and its
   * connection is destroyed; the server enforces the same (statement_timeout, and
   * idle_in_transaction_session_timeout). Unset, queries wait as long as the server lets them.
   */
  queryTimeoutMs?: number;
  /** PostgreSQL only: silence on a connection before TCP keepalive probes it. */
  keepAliveMs?: number;
  /** PostgreSQL only: told of every failure that says the database is away; while it does not answer, no connection is handed out. */
  health?: DatabaseHealth;
  /**
   * Requests are served before waiting background work: on embedded PGlite (one connection) they
   * take turns on it; on PostgreSQL background work holds at most a fifth of the pool while requests are served (BACKGROUND_POOL_SHARE).
   */
  priority?: WorkPriority;
  /** An in-memory PGlite starts from this data directory image (PGlite's dumpDataDir) instead of an empty cluster. */
  image?: Blob;
  /**
   * An embedded database already started (see startEmbeddedDatabase), used instead of starting
   * one: the tests hand each service one they empty and reuse after its close() (about 250 ms of
   * CPU saved a service). Closing the service calls its close().
   */
  embedded?: EmbeddedDatabase;
  /** Exporting, the embedded database's statements are spans (PostgreSQL's are the pg instrumentation's). */
  tracer?: Tracer;
}

/** Background work waiting this long for a connection takes the next turn anyway. */
const BACKGROUND_MAX_WAIT_MS = 250;
const DEFAULT_POOL_SIZE = 10;
/**
 * The embedded database's buffer cache lives in its WebAssembly memory, which never shrinks. With
 * initdb's 128 MB that memory reached 197 MB of the API's 410 MB under load; at 32 MB it reached
 * 141 MB and the API 327 MB, with `POST /payments` as fast (PostgreSQL still reads through the
 * OS's page cache). 16 MB saved 17 MB more and slowed it.
 */
const EMBEDDED_START_PARAMS = [...PGlite.defaultStartParams, '-c', 'shared_buffers=32MB'];
/**
 * While requests are served, background work holds at most this share of the pool. Each
 * connection it holds is CPU taken on both sides of it, on the same cores: with half the pool a
 * backlog of checks took POST /payments p50 from 13 ms to 52 ms; with a fifth, 13-28 ms, and
 * the checks still kept up (bench/README.md).
 */
const BACKGROUND_POOL_SHARE = 1 / 5;

const MIGRATIONS_FOLDER = new URL('./migrations/', import.meta.url);
/**
 * `NNN-name.migration.ts` (`.js` once built) is the migration `NNN-name`: the name an applied one
 * is recorded by in kysely_migration, so a file is never renamed once released. Names order the
 * migrations.
 */
const MIGRATION_FILE = /^(\d{3}-[a-z0-9-]+)\.migration\.[jt]s$/;

/**
 * The migrations in the folder beside this module: src/db/migrations under tsx and the tests,
 * dist/src/db/migrations once built. Kysely's FileMigrationProvider would name them with the
 * `.migration` suffix, and its own import() of a .ts file fails under Vitest, which only sees
 * the imports of modules it transforms.
 */
async function readMigrations(): Promise<Record<string, Migration>> {
  const files = (await readdir(MIGRATIONS_FOLDER)).filter((file) => /\.[jt]s$/.test(file));
  const entries = await Promise.all(
    files.map(async (file): Promise<[string, Migration]> => {
      const name = MIGRATION_FILE.exec(file)?.[1];
      // A misnamed file would otherwise be left out silently, and its schema change with it.
      if (!name) throw new Error(`${file} in src/db/migrations is not named NNN-name.migration.ts`);
      const migration = (await import(new URL(file, MIGRATIONS_FOLDER).href)) as Partial<Migration>;
      if (typeof migration.up !== 'function') throw new Error(`migration ${name} exports no up()`);
      return [name, migration as Migration];
    }),
  );
  return Object.fromEntries(entries);
}

/** Every migration by name; exported so a test can stop at one and check the next on data. */
export const migrationProvider: MigrationProvider = { getMigrations: readMigrations };

function createPgDialect(url: string, opts: DatabaseOptions) {
  const pool = new pg.Pool({
    connectionString: url,
    max: opts.poolSize ?? DEFAULT_POOL_SIZE,
    connectionTimeoutMillis: opts.connectTimeoutMs ?? 5000,
    // A server that vanished without closing the socket (a failover, a cut network) is noticed
    // after this much silence, not after the operating system's default of two hours.
    keepAlive: true,
    keepAliveInitialDelayMillis: opts.keepAliveMs ?? 10_000,
    statement_timeout: opts.queryTimeoutMs,
    idle_in_transaction_session_timeout: opts.queryTimeoutMs,
    options: opts.schema ? `-c search_path=${opts.schema}` : undefined,
  });
  const onError = (err: Error) => opts.onConnectionError?.(err);
  // pg emits 'error' on a client whose server went away. The pool listens only while the client
  // is idle; a client checked out (mid-transaction, say) with no listener of its own would end
  // the process with an unhandled 'error' event. The failed query rejects on its own, and on
  // release the pool sees the client is no longer queryable and discards it.
  pool.on('connect', (client) => client.on('error', onError));
  pool.on('error', onError);
  const dialect = new PostgresDialect({ pool: preparedStatementPool(pool, createStatementNamer(), { queryTimeoutMs: opts.queryTimeoutMs, health: opts.health }) });
  if (!opts.priority) return dialect;
  const connections = opts.poolSize ?? DEFAULT_POOL_SIZE;
  return requestsFirstPool(dialect, opts.priority, { connections, backgroundConnections: Math.max(1, Math.floor(connections * BACKGROUND_POOL_SHARE)), maxBackgroundWaitMs: BACKGROUND_MAX_WAIT_MS });
}

/** The embedded database (PGlite): one connection, in this process. */
export type EmbeddedDatabase = PGlite;

/** An in-memory embedded database, started from `image` (PGlite's dumpDataDir) or from a new cluster. */
export async function startEmbeddedDatabase(image?: Blob): Promise<EmbeddedDatabase> {
  const start = image ?? (await initializeEmbeddedCluster(null));
  return PGlite.create({ ...(start ? { loadDataDir: start } : {}), startParams: EMBEDDED_START_PARAMS });
}

async function createPgliteDialect(opts: DatabaseOptions): Promise<Dialect> {
  const { dataDir, priority, tracer } = opts;
  let client: PGlite;
  if (opts.embedded) {
    client = opts.embedded;
  } else if (isInMemory(dataDir)) {
    client = await startEmbeddedDatabase(opts.image);
  } else {
    await initializeEmbeddedClusterOnDisk(dataDir);
    client = await PGlite.create({ dataDir, startParams: EMBEDDED_START_PARAMS });
  }
  const embedded = new PGliteDialect(client);
  const dialect = tracer?.exports ? tracedDialect(embedded, tracer) : embedded;
  return priority ? requestsFirst(dialect, priority, { maxBackgroundWaitMs: BACKGROUND_MAX_WAIT_MS }) : dialect;
}

async function ensureSchema(url: string, schema: string): Promise<void> {
  if (!/^[a-z_][a-z0-9_]*$/.test(schema)) throw new Error(`invalid schema name ${schema}`);
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(`CREATE SCHEMA IF NOT EXISTS ${schema}`);
  } finally {
    await client.end();
  }
}

export async function createDatabase(opts: DatabaseOptions): Promise<Db> {
  let dialect;
  if (opts.databaseUrl) {
    if (opts.schema && !opts.standby) await ensureSchema(opts.databaseUrl, opts.schema);
    dialect = createPgDialect(opts.databaseUrl, opts);
  } else {
    dialect = await createPgliteDialect(opts);
  }
  return new Kysely<Database>({ dialect });
}

/**
 * Kysely's migrator first lists the tables of every schema in the database, with each column's
 * serial sequence looked up by name; a schema dropped by someone else at that moment (another
 * service sharing the database, parallel test runs) fails that listing with "schema does not
 * exist", or "relation" or "column ... does not exist" for a table the listing had just seen,
 * before anything has been applied.
 */
const CONCURRENT_DROP_CODES = new Set(['3F000', '42P01', '42703']);

export function isConcurrentSchemaDrop(err: unknown): boolean {
  return CONCURRENT_DROP_CODES.has(pgErrorCode(err) ?? '');
}

/** What `started` is told as the tables that only grow are moved to monthly partitions, after the migrations. */
export const MONTHLY_PARTITIONS = 'monthly-partitions';

/** Told of each migration as it begins: a first start's migrations take seconds, and say so. */
export type MigrationStarted = (name: string) => void;

/** The provider, with each migration's up() first telling `started` its name. */
function announcing(started: MigrationStarted): MigrationProvider {
  return {
    async getMigrations() {
      const migrations = await readMigrations();
      return Object.fromEntries(
        Object.entries(migrations).map(([name, m]): [string, Migration] => [
          name,
          {
            ...m,
            up: (db) => {
              started(name);
              return m.up(db);
            },
          },
        ]),
      );
    },
  };
}

/**
 * Applies pending migrations, up to `target` when given (a test of one migration stops short of
 * it); concurrent starters are serialised by Kysely's migration lock. Returns the names applied.
 */
export async function migrateToLatest(db: Db, schema?: string, target?: string, started?: MigrationStarted): Promise<string[]> {
  const provider = started ? announcing(started) : migrationProvider;
  // Naming the schema keeps Kysely from mistaking another schema's migration table for ours.
  const migrator = new Migrator({ db, provider, migrationTableSchema: schema });
  for (let attempt = 1; ; attempt++) {
    const { error, results } = target ? await migrator.migrateTo(target) : await migrator.migrateToLatest();
    const failed = results?.find((r) => r.status === 'Error');
    if (!error && !failed) {
      // Not a migration of Kysely's: those run in one transaction, and the move builds indexes concurrently, outside any.
      if (!target && (await unpartitionedTables(db)).length > 0) {
        started?.(MONTHLY_PARTITIONS);
        await movePartitionedTables(db);
      }
      return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
    }
    // Safe to repeat: applied migrations are recorded and skipped. A schema of many partitions takes a while to drop: later tries wait a little longer.
    if (!failed && isConcurrentSchemaDrop(error) && attempt < 6) {
      await new Promise((r) => setTimeout(r, 50 * attempt));
      continue;
    }
    const cause = error instanceof Error ? `: ${error.message}` : '';
    throw new Error(failed ? `migration ${failed.migrationName} failed${cause}` : `migrating failed${cause}`, { cause: error });
  }
}

/** The code's migrations against those the database records as applied. */
export interface SchemaState {
  /** The code's migrations, in order. */
  known: string[];
  /** The code's migrations the database has not had: the schema is older than the code. */
  pending: string[];
  /**
   * Migrations the database has had that the code does not have: a newer release migrated it.
   * Under the expand/contract rule this code still runs on it.
   */
  unknown: string[];
  /** Tables of this code's that are to be partitioned by month and are not yet (src/db/partition-move.ts). */
  unpartitioned: string[];
}

/** Kysely's record of applied migrations (its default table name). */
const MIGRATION_TABLE = 'kysely_migration';

/** Which migrations the database has had, beside the code's; a database never migrated has had none. */
export async function readSchemaState(db: Db, schema?: string): Promise<SchemaState> {
  const known = Object.keys(await readMigrations()).sort();
  let applied: string[];
  try {
    const table = sql.table(schema ? `${schema}.${MIGRATION_TABLE}` : MIGRATION_TABLE);
    const { rows } = await sql<{ name: string }>`SELECT name FROM ${table}`.execute(db);
    applied = rows.map((r) => r.name);
  } catch (err) {
    if (pgErrorCode(err) !== '42P01') throw err;
    applied = [];
  }
  const done = new Set(applied);
  const ours = new Set(known);
  return { known, pending: known.filter((n) => !done.has(n)), unknown: applied.filter((n) => !ours.has(n)).sort(), unpartitioned: await unpartitionedTables(db) };
}

export async function pingDatabase(db: Db): Promise<boolean> {
  try {
    await sql`SELECT 1`.execute(db);
    return true;
  } catch {
    return false;
  }
}

/**
 * Asks PostgreSQL whether it answers, over a connection of its own (never the request pool, which
 * a silent failover can fill with queries waiting out their deadline), within `timeoutMs`. One
 * ask at a time: callers meanwhile share its answer. A connection that failed or did not answer
 * in time is dropped and the next ask makes a new one. When the kept connection fails, the same
 * ask tries a new one: whatever ended it (an operator's kill of every connection, say) need not
 * have taken the database with it.
 */
export function createDatabasePinger(opts: { url: string; timeoutMs: number; keepAliveMs?: number }) {
  let client: pg.Client | null = null;
  let inFlight: Promise<boolean> | null = null;
  let closed = false;

  const drop = (c: pg.Client | null) => {
    if (!c) return;
    if (client === c) client = null;
    c.end().catch(() => undefined);
  };

  async function ask(given: { up: boolean }): Promise<boolean> {
    const kept = client;
    if (kept && (await askOn(kept))) return true;
    // A silent kept connection can fail long after its ask was given up at the deadline, or after
    // close: such an ask makes no connection that nobody would end.
    if (given.up || closed) return false;
    const c = new pg.Client({
      connectionString: opts.url,
      connectionTimeoutMillis: opts.timeoutMs,
      keepAlive: true,
      keepAliveInitialDelayMillis: opts.keepAliveMs ?? 10_000,
      statement_timeout: opts.timeoutMs,
    });
    c.on('error', () => drop(c));
    client = c;
    try {
      await c.connect();
    } catch {
      drop(c);
      return false;
    }
    return askOn(c);
  }

  async function askOn(c: pg.Client): Promise<boolean> {
    try {
      await c.query('SELECT 1');
      return true;
    } catch {
      drop(c);
      return false;
    }
  }

  return {
    ping(): Promise<boolean> {
      if (inFlight) return inFlight;
      const given = { up: false };
      inFlight = withDeadline(ask(given), opts.timeoutMs, () => {
        given.up = true;
        drop(client);
        return false;
      }).finally(() => (inFlight = null));
      return inFlight;
    },
    close(): Promise<void> {
      closed = true;
      const c = client;
      client = null;
      return c ? c.end().catch(() => undefined) : Promise.resolve();
    },
  };
}

export type DatabasePinger = ReturnType<typeof createDatabasePinger>;


export function isUniqueViolation(err: unknown): boolean {
  return pgErrorCode(err) === '23505';
}
