import { sql, type Kysely, type Transaction } from 'kysely';
import type { Database } from './db.types.js';
import { pgErrorCode } from './pg-error.js';
import { cutoverMonth, legacyPartitionName, monthStart } from '../domain/partition-months.js';
import { createPartitionRepository, MONTHS_AHEAD, PARTITIONED_TABLES, type PartitionedTable } from './repositories/partition.repository.js';

/** The database handle, named here rather than imported from database.ts, which runs the move: no import cycle. */
type Db = Kysely<Database>;

/**
 * A unique key of a partitioned table must hold its partition column: each table's unique keys
 * with created_at added. For deliveries and pushes that changes nothing, since their created_at
 * is their event's (alignDeliveryTimes makes it so for the deliveries a recovery queued before):
 * (webhook, event) stays unique.
 */
interface UniqueKey {
  name: string;
  kind: 'primary' | 'constraint' | 'index';
  columns: string;
  where?: string;
}

const UNIQUE_KEYS: Record<PartitionedTable, UniqueKey[]> = {
  events: [
    { name: 'events_pkey', kind: 'primary', columns: 'id, created_at' },
    { name: 'events_sequence_key', kind: 'index', columns: 'sequence, created_at', where: 'sequence IS NOT NULL' },
  ],
  webhook_deliveries: [
    { name: 'webhook_deliveries_pkey', kind: 'primary', columns: 'id, created_at' },
    { name: 'webhook_deliveries_webhook_id_event_id_key', kind: 'constraint', columns: 'webhook_id, event_id, created_at' },
  ],
  webhook_attempts: [{ name: 'webhook_attempts_pkey', kind: 'primary', columns: 'id, created_at' }],
  push_deliveries: [
    { name: 'push_deliveries_pkey', kind: 'primary', columns: 'id, created_at' },
    { name: 'push_deliveries_event_id_device_id_key', kind: 'constraint', columns: 'event_id, device_id, created_at' },
  ],
};

/** Rows written while a table is moved are stamped now; the legacy partition's bound is at least this far ahead. */
const CUTOVER_MARGIN_MS = 7 * 24 * 3600 * 1000;
/** The swap's longest wait for its locks; what queues behind it waits no longer. */
const LOCK_TIMEOUT = '1s';
const SWAP_ATTEMPTS = 30;

const PREBUILT = (table: PartitionedTable, i: number) => `${table}_legacy_k${i}`;
const RANGE_CHECK = (table: PartitionedTable) => `${table}_legacy_range`;

/** The swap found a table with rows but without its keys and range check in place: prepare, then swap again. */
class NotPrepared extends Error {}

export interface PartitionMove {
  /** Tables that were moved (empty when every table was partitioned already). */
  moved: PartitionedTable[];
  /** Tables that held rows: they are the legacy partition up to the cutover. */
  withRows: PartitionedTable[];
  cutover: Date | null;
  swapAttempts: number;
  /** Times a statement gave up waiting for its lock (lock_timeout) and was tried again, in preparing and in the swap. */
  lockWaits: number;
  /** How long the swap transaction held its exclusive locks, the last (successful) time. */
  swapMs: number;
}

export async function unpartitionedTables(db: Db): Promise<PartitionedTable[]> {
  const { rows } = await sql<{ name: PartitionedTable }>`
    SELECT relname AS name FROM pg_class
    WHERE oid = ANY(ARRAY[${sql.join(PARTITIONED_TABLES.map((t) => sql`to_regclass(${t})`))}]::regclass[]) AND relkind = 'r'`.execute(db);
  return PARTITIONED_TABLES.filter((t) => rows.some((r) => r.name === t));
}

async function withLockTimeout<T>(db: Db, fn: (trx: Transaction<Database>) => Promise<T>): Promise<T> {
  return db.transaction().execute(async (trx) => {
    await sql.raw(`SET LOCAL lock_timeout = '${LOCK_TIMEOUT}'`).execute(trx);
    return fn(trx);
  });
}

/** A lock not had within the timeout, a deadlock, or a table that gained rows: each worth another try. */
const retryable = (err: unknown) => err instanceof NotPrepared || ['55P03', '40P01'].includes(pgErrorCode(err) ?? '');

/** Lock timeouts met by one move: its report says how often it waited. */
interface Waits {
  lock: number;
}

async function retrying<T>(what: string, waits: Waits, fn: () => Promise<T>): Promise<{ value: T; attempts: number }> {
  for (let attempt = 1; ; attempt++) {
    try {
      return { value: await fn(), attempts: attempt };
    } catch (err) {
      if (!retryable(err) || attempt >= SWAP_ATTEMPTS) throw new Error(`${what}: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
      if (pgErrorCode(err) === '55P03') waits.lock++;
      await new Promise((r) => setTimeout(r, Math.min(2000, 100 * attempt)));
    }
  }
}

async function hasRows(db: Db, table: PartitionedTable): Promise<boolean> {
  const { rows } = await sql<{ found: boolean }>`SELECT EXISTS (SELECT 1 FROM ${sql.table(table)}) AS found`.execute(db);
  return rows[0]?.found === true;
}

async function indexState(db: Db, name: string): Promise<'valid' | 'invalid' | 'missing'> {
  const { rows } = await sql<{ valid: boolean }>`SELECT i.indisvalid AS valid FROM pg_index i WHERE i.indexrelid = to_regclass(${name})`.execute(db);
  const row = rows[0];
  return row ? (row.valid ? 'valid' : 'invalid') : 'missing';
}

/**
 * What the swap needs of a table with rows, built while the service reads and writes it: each
 * unique key with created_at (CREATE INDEX CONCURRENTLY), and a validated CHECK that every row is
 * below the cutover, so that attaching the table as a partition scans nothing. Only the CHECK's
 * addition takes an exclusive lock, briefly, under the lock timeout.
 */
async function prepare(db: Db, table: PartitionedTable, cutover: Date, waits: Waits): Promise<void> {
  for (const [i, key] of UNIQUE_KEYS[table].entries()) {
    const name = PREBUILT(table, i);
    const state = await indexState(db, name);
    if (state === 'valid') continue;
    // An index a build left invalid (the process ended mid-way) is dropped and built again.
    if (state === 'invalid') await sql`DROP INDEX CONCURRENTLY IF EXISTS ${sql.table(name)}`.execute(db);
    await sql`CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS ${sql.table(name)} ON ${sql.table(table)} (${sql.raw(key.columns)})${key.where ? sql.raw(` WHERE ${key.where}`) : sql``}`.execute(db);
  }
  const check = sql.table(RANGE_CHECK(table));
  await retrying(`adding ${RANGE_CHECK(table)}`, waits, () =>
    withLockTimeout(db, async (trx) => {
      await sql`ALTER TABLE ${sql.table(table)} DROP CONSTRAINT IF EXISTS ${check}`.execute(trx);
      await sql`ALTER TABLE ${sql.table(table)} ADD CONSTRAINT ${check} CHECK (created_at < ${sql.lit(cutover.toISOString())}::timestamptz) NOT VALID`.execute(trx);
    }),
  );
  // Takes SHARE UPDATE EXCLUSIVE only: reads and writes go on while it scans.
  await sql`ALTER TABLE ${sql.table(table)} VALIDATE CONSTRAINT ${check}`.execute(db);
}

async function prepared(trx: Transaction<Database>, table: PartitionedTable): Promise<boolean> {
  const { rows } = await sql<{ valid: boolean }>`
    SELECT convalidated AS valid FROM pg_constraint WHERE conrelid = to_regclass(${table}) AND conname = ${RANGE_CHECK(table)}`.execute(trx);
  if (rows[0]?.valid !== true) return false;
  for (const i of UNIQUE_KEYS[table].keys()) {
    const { rows: idx } = await sql<{ valid: boolean }>`SELECT indisvalid AS valid FROM pg_index WHERE indexrelid = to_regclass(${PREBUILT(table, i)})`.execute(trx);
    if (idx[0]?.valid !== true) return false;
  }
  return true;
}

interface Catalog {
  /** Non-unique indexes, as CREATE INDEX statements naming the table: made again on the parent, they adopt the legacy ones. */
  indexes: { name: string; def: string }[];
  /** Foreign keys from the table, as ALTER TABLE ... ADD CONSTRAINT clauses. */
  foreignKeys: { name: string; def: string }[];
}

async function readCatalog(trx: Transaction<Database>, table: PartitionedTable): Promise<Catalog> {
  const keyNames = new Set([...UNIQUE_KEYS[table].map((k) => k.name), ...UNIQUE_KEYS[table].map((_, i) => PREBUILT(table, i))]);
  const { rows: idx } = await sql<{ name: string; def: string; unique: boolean }>`
    SELECT c.relname AS name, pg_get_indexdef(i.indexrelid) AS def, i.indisunique AS unique
    FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid WHERE i.indrelid = to_regclass(${table})`.execute(trx);
  const strays = idx.filter((r) => r.unique && !keyNames.has(r.name));
  // A unique key this move does not know could not be kept as it is on a partitioned table: stop rather than drop it.
  if (strays.length > 0) throw new Error(`${table} has unique indexes the partition move does not know: ${strays.map((r) => r.name).join(', ')}`);
  const { rows: fks } = await sql<{ name: string; def: string }>`
    SELECT conname AS name, pg_get_constraintdef(oid) AS def FROM pg_constraint WHERE conrelid = to_regclass(${table}) AND contype = 'f'`.execute(trx);
  return { indexes: idx.filter((r) => !r.unique), foreignKeys: fks };
}

/** The legacy partition's own name for an index of the table. */
function legacyIndexName(table: PartitionedTable, index: string): string {
  const name = index.startsWith(`${table}_`) ? `${legacyPartitionName(table)}_${index.slice(table.length + 1)}` : `${index}_legacy`;
  return name.slice(0, 63);
}

/**
 * One table's swap, inside the transaction that holds every moved table exclusively: the table
 * becomes the legacy partition of a new partitioned table of the same name (or is dropped when
 * it is empty). Catalog changes only: the keys were built and the rows checked beforehand.
 */
async function swapTable(trx: Transaction<Database>, table: PartitionedTable, withRows: boolean, cutover: Date): Promise<void> {
  const t = sql.table(table);
  const legacy = legacyPartitionName(table);
  const catalog = await readCatalog(trx, table);
  for (const key of UNIQUE_KEYS[table]) {
    if (key.kind === 'index') await sql`DROP INDEX IF EXISTS ${sql.table(key.name)}`.execute(trx);
    else await sql`ALTER TABLE ${t} DROP CONSTRAINT IF EXISTS ${sql.table(key.name)}`.execute(trx);
  }
  await sql`ALTER TABLE ${t} RENAME TO ${sql.table(legacy)}`.execute(trx);
  for (const index of catalog.indexes) await sql`ALTER INDEX ${sql.table(index.name)} RENAME TO ${sql.table(legacyIndexName(table, index.name))}`.execute(trx);
  for (const [i, key] of UNIQUE_KEYS[table].entries()) {
    if (withRows && key.kind !== 'index') await sql`ALTER TABLE ${sql.table(legacy)} ADD CONSTRAINT ${sql.table(PREBUILT(table, i))} UNIQUE USING INDEX ${sql.table(PREBUILT(table, i))}`.execute(trx);
  }
  await sql`CREATE TABLE ${t} (LIKE ${sql.table(legacy)} INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING STORAGE) PARTITION BY RANGE (created_at)`.execute(trx);
  await sql`ALTER TABLE ${t} DROP CONSTRAINT IF EXISTS ${sql.table(RANGE_CHECK(table))}`.execute(trx);
  for (const key of UNIQUE_KEYS[table]) {
    const cols = sql.raw(key.columns);
    if (key.kind === 'primary') await sql`ALTER TABLE ${t} ADD CONSTRAINT ${sql.table(key.name)} PRIMARY KEY (${cols})`.execute(trx);
    else if (key.kind === 'constraint') await sql`ALTER TABLE ${t} ADD CONSTRAINT ${sql.table(key.name)} UNIQUE (${cols})`.execute(trx);
    else await sql`CREATE UNIQUE INDEX ${sql.table(key.name)} ON ${t} (${cols})${key.where ? sql.raw(` WHERE ${key.where}`) : sql``}`.execute(trx);
  }
  // The definitions name the table, which is now the partitioned one: each adopts its legacy twin on attach.
  for (const index of catalog.indexes) await sql.raw(index.def).execute(trx);
  for (const fk of catalog.foreignKeys) await sql`ALTER TABLE ${t} ADD CONSTRAINT ${sql.table(fk.name)} ${sql.raw(fk.def)}`.execute(trx);
  if (!withRows) {
    await sql`DROP TABLE ${sql.table(legacy)}`.execute(trx);
    return;
  }
  // The validated range check proves the bound: attaching scans no row.
  await sql`ALTER TABLE ${t} ATTACH PARTITION ${sql.table(legacy)} FOR VALUES FROM (MINVALUE) TO (${sql.lit(cutover.toISOString())})`.execute(trx);
  await sql`ALTER TABLE ${sql.table(legacy)} DROP CONSTRAINT ${sql.table(RANGE_CHECK(table))}`.execute(trx);
}

/** Foreign keys into the moved tables: a partitioned table's key holds created_at, which they do not carry. */
async function dropIncomingKeys(trx: Transaction<Database>, tables: PartitionedTable[]): Promise<void> {
  const { rows } = await sql<{ owner: string; name: string }>`
    SELECT conrelid::regclass::text AS owner, conname AS name FROM pg_constraint
    WHERE contype = 'f' AND confrelid = ANY(ARRAY[${sql.join(tables.map((t) => sql`to_regclass(${t})`))}]::regclass[])`.execute(trx);
  for (const r of rows) await sql`ALTER TABLE ${sql.raw(r.owner)} DROP CONSTRAINT ${sql.table(r.name)}`.execute(trx);
}

/**
 * Gives every webhook delivery its event's created_at. A delivery the code of this release
 * writes has it already; one a recovery queued before the tables were partitioned was stamped
 * with the time of the recovery. The (webhook, event) key holds created_at since the move, so such
 * a delivery would not stop a recovery from queueing its event a second time, and the reads that
 * join a delivery to its event by (id, created_at) would not find it. A delivery whose twin with
 * the event's time exists already (a recovery queued it after the move) keeps its own time: both
 * were queued, and neither can be taken back. Rows of the legacy partition only, an event being
 * older than its deliveries: a row moved to its event's time stays there. Row locks only, on the
 * rows it changes. Returns how many it changed.
 */
export async function alignDeliveryTimes<DB>(db: Kysely<DB>): Promise<number> {
  const { numAffectedRows } = await sql`
    UPDATE webhook_deliveries d SET created_at = e.created_at
    FROM events e
    WHERE e.id = d.event_id AND d.created_at <> e.created_at
      AND NOT EXISTS (SELECT 1 FROM webhook_deliveries t WHERE t.webhook_id = d.webhook_id AND t.event_id = d.event_id AND t.created_at = e.created_at)`.execute(db);
  return Number(numAffectedRows ?? 0);
}

/**
 * Makes the tables that only grow partitioned by month, on a database of any size, without a
 * lock held for more than a moment: the keys are built and the rows checked while the service
 * runs, then one short transaction (its lock wait bounded by lock_timeout, retried) renames each
 * table, makes a partitioned one in its place and attaches the old one as its first partition,
 * from MINVALUE to the cutover a week or more ahead; monthly partitions follow. An empty table is
 * replaced instead. Safe to repeat: a table already partitioned is left alone. On a failed swap
 * the range checks are taken off again, so rows past the cutover are never refused.
 */
export async function movePartitionedTables(db: Db): Promise<PartitionMove> {
  const tables = await unpartitionedTables(db);
  if (tables.length === 0) return { moved: [], withRows: [], cutover: null, swapAttempts: 0, lockWaits: 0, swapMs: 0 };
  const partitions = createPartitionRepository(db);
  const now = await partitions.databaseNow();
  const cutover = cutoverMonth(now, CUTOVER_MARGIN_MS);
  const waits: Waits = { lock: 0 };
  const prepareAll = async () => {
    for (const table of tables) {
      if (await hasRows(db, table)) await prepare(db, table, cutover, waits);
    }
  };
  await prepareAll();
  let withRows: PartitionedTable[] = [];
  let swapMs = 0;
  try {
    const { attempts } = await retrying('swapping in the partitioned tables', waits, async () => {
      try {
        await withLockTimeout(db, async (trx) => {
          const started = performance.now();
          await sql`LOCK TABLE ${sql.join(tables.map((t) => sql.table(t)))} IN ACCESS EXCLUSIVE MODE`.execute(trx);
          withRows = [];
          for (const table of tables) {
            if (!(await hasRows(trx, table))) continue;
            if (!(await prepared(trx, table))) throw new NotPrepared(table);
            withRows.push(table);
          }
          await dropIncomingKeys(trx, tables);
          for (const table of tables) await swapTable(trx, table, withRows.includes(table), cutover);
          const repo = createPartitionRepository(trx);
          for (const table of tables) await repo.createMonths(table, monthStart(now), MONTHS_AHEAD);
          swapMs = performance.now() - started;
        });
      } catch (err) {
        // A table that was empty when we looked has rows now: it is prepared before the next try.
        if (err instanceof NotPrepared) await prepareAll();
        throw err;
      }
    });
    await partitions.createAhead();
    // A recovery of the previous release may have queued one while the keys were built.
    if (withRows.includes('webhook_deliveries')) await alignDeliveryTimes(db);
    return { moved: tables, withRows, cutover: withRows.length > 0 ? cutover : null, swapAttempts: attempts, lockWaits: waits.lock, swapMs: Math.round(swapMs) };
  } catch (err) {
    for (const table of await unpartitionedTables(db)) {
      await sql`ALTER TABLE ${sql.table(table)} DROP CONSTRAINT IF EXISTS ${sql.table(RANGE_CHECK(table))}`.execute(db).catch(() => undefined);
    }
    throw err;
  }
}
