import { startEmbeddedDatabase, type EmbeddedDatabase } from '../../src/db/database.js';
import { databaseImage } from './database-image.js';

/**
 * The embedded databases of one test worker, reused from one test context to the next: starting
 * one from the run's image costs about 250 ms of CPU, emptying one back to the image's rows about
 * 10 ms, and the suite makes over a hundred contexts.
 *
 * A context gets a handle that refuses every statement once its service has closed it, so a
 * straggling pass of that service can never write into the next context's database. On the close,
 * the database is emptied back to what the image holds (its rows and its sequences) and waits for
 * the next context; one whose schema a test changed, or that fails to empty, is closed instead.
 */

/** What an empty database of the image holds beyond its schema: its rows and its sequences. */
interface Baseline {
  /** Every table and column, constraint, index, trigger and function: a change means a test altered the schema. */
  schema: string;
  /** The image's rows of each table that has any, as JSON. */
  rows: { table: string; json: string }[];
  tables: string[];
  sequences: { name: string; last: string | null }[];
}

interface Pooled {
  db: EmbeddedDatabase;
  baseline: Baseline;
}

/** Idle databases kept for the next contexts; more are made when a test holds several contexts at once. */
const MAX_IDLE = 2;
/** Bookkeeping of the migrations, which the image holds and no service changes. */
const KEPT = ['kysely_migration', 'kysely_migration_lock'];
const idle: Pooled[] = [];

const SCHEMA_SQL = `
  SELECT md5(string_agg(item, ',' ORDER BY item)) AS schema FROM (
    SELECT concat_ws(':', 'c', c.relname, c.relkind, a.attname, a.atttypid, a.attnotnull) AS item
      FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace LEFT JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
      WHERE n.nspname = 'public'
    UNION ALL SELECT concat_ws(':', 'k', conname, pg_get_constraintdef(oid)) FROM pg_constraint WHERE connamespace = 'public'::regnamespace
    UNION ALL SELECT concat_ws(':', 't', tgname, tgenabled) FROM pg_trigger WHERE NOT tgisinternal
    UNION ALL SELECT concat_ws(':', 'p', proname, md5(prosrc)) FROM pg_proc WHERE pronamespace = 'public'::regnamespace
  ) items`;

async function baselineOf(db: EmbeddedDatabase): Promise<Baseline> {
  const schema = (await db.query<{ schema: string }>(SCHEMA_SQL)).rows[0]?.schema ?? '';
  const tables = (
    await db.query<{ name: string }>(
      `SELECT quote_ident(relname) AS name FROM pg_class WHERE relnamespace = 'public'::regnamespace AND relkind = 'r' AND relname <> ALL($1::text[]) ORDER BY relname`,
      [KEPT],
    )
  ).rows.map((r) => r.name);
  const rows: Baseline['rows'] = [];
  for (const table of tables) {
    const json = (await db.query<{ json: string | null }>(`SELECT json_agg(t)::text AS json FROM ${table} t`)).rows[0]?.json;
    if (json) rows.push({ table, json });
  }
  const sequences = (
    await db.query<{ name: string; last: string | null }>(`SELECT quote_ident(sequencename) AS name, last_value::text AS last FROM pg_sequences WHERE schemaname = 'public'`)
  ).rows;
  return { schema, rows, tables, sequences };
}

/** Empties a database back to its baseline; false when it cannot be reused. */
async function emptied(p: Pooled): Promise<boolean> {
  const { db, baseline } = p;
  try {
    // A test may close its service in the middle of a transaction.
    if (db.isInTransaction()) await db.exec('ROLLBACK');
    // Session state: settings, prepared statements, temporary tables, advisory locks.
    await db.exec('DISCARD ALL');
    if ((await db.query<{ schema: string }>(SCHEMA_SQL)).rows[0]?.schema !== baseline.schema) return false;
    const sequences = baseline.sequences.map((s) => (s.last === null ? `ALTER SEQUENCE ${s.name} RESTART;` : `SELECT setval('${s.name}', ${s.last});`));
    // Replica mode skips triggers, foreign keys included: the rows go in any order, and none is logged.
    await db.transaction(async (tx) => {
      await tx.exec(`SET LOCAL session_replication_role = replica; ${baseline.tables.map((t) => `DELETE FROM ${t};`).join(' ')} ${sequences.join(' ')}`);
      for (const { table, json } of baseline.rows) await tx.query(`INSERT INTO ${table} SELECT * FROM json_populate_recordset(NULL::${table}, $1)`, [json]);
    });
    return true;
  } catch {
    return false;
  }
}

/** The handle a context's service uses: the database until the service closes it, then nothing. */
function handleOn(p: Pooled): EmbeddedDatabase {
  let closed = false;
  const close = async () => {
    if (closed) return;
    closed = true;
    if (idle.length < MAX_IDLE && (await emptied(p))) idle.push(p);
    else await p.db.close().catch(() => undefined);
  };
  const refused = () => Promise.reject(new Error('the embedded database was closed with its service'));
  return new Proxy(p.db, {
    get(target, prop) {
      if (prop === 'close') return close;
      if (prop === 'closed') return closed;
      const value: unknown = Reflect.get(target, prop, target);
      if (typeof value !== 'function') return value;
      // PGlite's methods use private fields, so they run on the database itself, not the handle.
      return closed ? refused : (value as (...args: unknown[]) => unknown).bind(target);
    },
  });
}

/** An embedded database for a test context, as the image holds it; none on PostgreSQL. */
export async function pooledEmbeddedDatabase(): Promise<EmbeddedDatabase | undefined> {
  const reused = idle.pop();
  if (reused) return handleOn(reused);
  const image = await databaseImage();
  if (!image) return undefined;
  const db = await startEmbeddedDatabase(image);
  return handleOn({ db, baseline: await baselineOf(db) });
}
