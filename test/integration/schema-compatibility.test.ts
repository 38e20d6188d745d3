import { randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDatabase, migrateToLatest, migrationProvider, MONTHLY_PARTITIONS, type Db } from '../../src/db/database.js';
import { testConfig } from '../helpers/test-config.js';
import { dropSchema } from '../helpers/test-context.js';
import { initdbImage } from '../helpers/database-image.js';

/*
 * The expand/contract rule (docs/deployment.md, Migrations): each migration only adds, so the
 * previous release's code runs on the schema it leaves. Proved by the schema itself, migration by
 * migration: what the code of the release before migration N could read or write after N-1 is
 * still there after N, as it was.
 *
 * - No table and no column goes, and no column changes its type.
 * - No column that took NULL stops taking it; no column added to an existing table is NOT NULL
 *   without a default (the previous code's INSERTs leave it out).
 * - A CHECK constraint that stays keeps its definition, or, a list of words, keeps every word;
 *   a new one tests only columns new in N (the previous code never writes them).
 * - Every unique index stays (the previous code's ON CONFLICT names it); a new one covers only
 *   columns new in N.
 * - No trigger is added to an existing table: it could refuse the previous code's writes.
 *
 * What the schema cannot show (what a trigger function or a backfill does) stays the author's
 * and the reviewer's; HISTORICAL_EXCEPTIONS holds the migrations released before the rule that
 * break it (or, as 007, only seem to), each with its reason. A migration after them has none: a
 * removal is the contract half of a later release, once no released code reads what it removes,
 * and is listed here with that reason.
 */
const HISTORICAL_EXCEPTIONS: Record<string, { reason: string; breaks: string[] }> = {
  [MONTHLY_PARTITIONS]: {
    reason:
      'a partitioned table can only hold unique keys that include its partition column: each unique key gains created_at, which every writer sets to the event\'s, so what was unique stays unique; the previous release\'s recover names the old (webhook_id, event_id) key and fails on the moved schema (docs/deployment.md, Monthly partitions)',
    breaks: [
      ...(
        [
          ['events', 'events_pkey', 'id', ''],
          ['events', 'events_sequence_key', 'sequence', ' WHERE (sequence IS NOT NULL)'],
          ['push_deliveries', 'push_deliveries_event_id_device_id_key', 'event_id, device_id', ''],
          ['push_deliveries', 'push_deliveries_pkey', 'id', ''],
          ['webhook_attempts', 'webhook_attempts_pkey', 'id', ''],
          ['webhook_deliveries', 'webhook_deliveries_pkey', 'id', ''],
          ['webhook_deliveries', 'webhook_deliveries_webhook_id_event_id_key', 'webhook_id, event_id', ''],
        ] as const
      ).flatMap(([table, index, columns, where]) => [
        `${table}: new unique index on existing columns (CREATE UNIQUE INDEX ${index} ON ONLY ${table} USING btree (${columns}, created_at)${where})`,
        `${table}: unique index removed (CREATE UNIQUE INDEX ${index} ON ${table} USING btree (${columns})${where})`,
      ]),
    ],
  },
  '004-payment-lifecycle': {
    reason: 'released with the code that fills payments.source; the previous code inserted payments without it (a stop-the-world deploy)',
    breaks: ['payments.source: added NOT NULL without a default'],
  },
  '007-counters': {
    reason: 'flagged by the trigger rule, yet compatible: the counter triggers only record what a write did in counter_deltas and refuse none',
    breaks: [
      'invoices: trigger invoices_counters added',
      'partner_invoices: trigger partner_invoices_counters_delete added',
      'partner_invoices: trigger partner_invoices_counters_insert added',
      'payments: trigger payments_counters_insert added',
      'payments: trigger payments_counters_update added',
    ],
  },
  '009-payment-history': {
    reason: 'the history triggers refuse a status change that names no event, which the previous code made (a stop-the-world deploy)',
    breaks: ['payments: trigger payment_history_insert_trg added', 'payments: trigger payment_history_update_trg added'],
  },
  '018-status-checks': {
    reason: 'states as constraints the words the code already wrote, each list copied from src/domain; no released code wrote another',
    breaks: [
      'api_keys: new check api_keys_environment_check on existing columns',
      'discrepancies: new check discrepancies_kind_check on existing columns',
      'discrepancies: new check discrepancies_source_check on existing columns',
      'discrepancies: new check discrepancies_status_check on existing columns',
      'events: new check events_event_check on existing columns',
      'invoices: new check invoices_source_check on existing columns',
      'ministry_cancellations: new check ministry_cancellations_source_check on existing columns',
      'payment_history: new check payment_history_cause_check on existing columns',
      'payment_history: new check payment_history_event_check on existing columns',
      'payment_history: new check payment_history_from_status_check on existing columns',
      'payment_history: new check payment_history_to_status_check on existing columns',
      'payments: new check payments_source_check on existing columns',
      'payments: new check payments_status_cause_check on existing columns',
      'payments: new check payments_status_event_check on existing columns',
      'push_deliveries: new check push_deliveries_status_check on existing columns',
      'reconciliation_runs: new check reconciliation_runs_status_check on existing columns',
      'reconciliation_sources: new check reconciliation_sources_source_check on existing columns',
      'reconciliation_sources: new check reconciliation_sources_status_check on existing columns',
    ],
  },
  '024-invoice-billed-amount': {
    reason: 'released with the code that fills invoices.billed_amount; the previous code stored invoices without it (a stop-the-world deploy)',
    breaks: ['invoices.billed_amount: added NOT NULL without a default'],
  },
};

interface Column {
  table: string;
  column: string;
  type: string;
  notNull: boolean;
  hasDefault: boolean;
}

interface Check {
  table: string;
  name: string;
  definition: string;
  columns: string[];
}

interface UniqueIndex {
  table: string;
  definition: string;
  columns: string[];
}

interface Trigger {
  table: string;
  name: string;
}

interface Snapshot {
  tables: Set<string>;
  columns: Map<string, Column>;
  checks: Map<string, Check>;
  uniques: UniqueIndex[];
  triggers: Trigger[];
}

/** The schema's tables, columns, CHECK constraints, unique indexes and triggers, less Kysely's own bookkeeping. */
async function snapshot(db: Db): Promise<Snapshot> {
  const ours = sql`n.nspname = current_schema() AND c.relname NOT LIKE 'kysely_%'`;
  const { rows: columns } = await sql<Column>`
    SELECT c.relname AS "table", a.attname AS "column", format_type(a.atttypid, a.atttypmod) AS type,
           a.attnotnull AS "notNull", (a.atthasdef OR a.attidentity <> '') AS "hasDefault"
    FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE ${ours} AND c.relkind IN ('r', 'p') AND a.attnum > 0 AND NOT a.attisdropped`.execute(db);
  const { rows: tables } = await sql<{ table: string }>`
    SELECT c.relname AS "table" FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE ${ours} AND c.relkind IN ('r', 'p')`.execute(db);
  const { rows: checks } = await sql<Check>`
    SELECT c.relname AS "table", con.conname AS name, pg_get_constraintdef(con.oid) AS definition,
           array(SELECT a.attname::text FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attnum = ANY (con.conkey) ORDER BY a.attname) AS columns
    FROM pg_constraint con JOIN pg_class c ON c.oid = con.conrelid JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE ${ours} AND con.contype = 'c'`.execute(db);
  const { rows: uniques } = await sql<UniqueIndex>`
    SELECT c.relname AS "table", pg_get_indexdef(i.indexrelid) AS definition,
           array(SELECT a.attname::text FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attnum = ANY (i.indkey) ORDER BY a.attname) AS columns
    FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE ${ours} AND i.indisunique`.execute(db);
  const { rows: triggers } = await sql<Trigger>`
    SELECT c.relname AS "table", t.tgname AS name
    FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE ${ours} AND NOT t.tgisinternal`.execute(db);
  return {
    tables: new Set(tables.map((t) => t.table)),
    columns: new Map(columns.map((c) => [`${c.table}.${c.column}`, c])),
    checks: new Map(checks.map((c) => [`${c.table}.${c.name}`, c])),
    uniques,
    triggers,
  };
}

const EMPTY: Snapshot = { tables: new Set(), columns: new Map(), checks: new Map(), uniques: [], triggers: [] };

/** The words of a CHECK that is a list of them (`x IN (...)`, which PostgreSQL shows as `= ANY (ARRAY[...])`), or null. */
function wordsOf(definition: string): Set<string> | null {
  if (!/= ANY \(/.test(definition)) return null;
  return new Set([...definition.matchAll(/'([^']*)'::text/g)].map((m) => m[1] ?? ''));
}

/** What migration N changed that the code before it could trip on, as lines. */
function breaks(before: Snapshot, after: Snapshot): string[] {
  const found: string[] = [];
  const existed = (table: string, columns: string[]) => before.tables.has(table) && columns.some((c) => before.columns.has(`${table}.${c}`));
  for (const table of before.tables) if (!after.tables.has(table)) found.push(`${table}: table removed`);
  for (const [key, was] of before.columns) {
    const now = after.columns.get(key);
    if (!now) found.push(`${key}: column removed`);
    else if (now.type !== was.type) found.push(`${key}: type ${was.type} became ${now.type}`);
    else if (now.notNull && !was.notNull) found.push(`${key}: became NOT NULL`);
  }
  for (const [key, now] of after.columns) {
    if (!before.columns.has(key) && before.tables.has(now.table) && now.notNull && !now.hasDefault) found.push(`${key}: added NOT NULL without a default`);
  }
  for (const [key, was] of before.checks) {
    const now = after.checks.get(key);
    if (!now || now.definition === was.definition) continue;
    const [wasWords, nowWords] = [wordsOf(was.definition), wordsOf(now.definition)];
    const widened = wasWords && nowWords && [...wasWords].every((w) => nowWords.has(w));
    if (!widened) found.push(`${was.table}: check ${was.name} changed from ${was.definition} to ${now.definition}`);
  }
  for (const [key, now] of after.checks) {
    if (!before.checks.has(key) && existed(now.table, now.columns)) found.push(`${now.table}: new check ${now.name} on existing columns`);
  }
  for (const was of before.uniques) {
    if (!after.uniques.some((u) => u.definition === was.definition)) found.push(`${was.table}: unique index removed (${was.definition})`);
  }
  for (const now of after.uniques) {
    if (!before.uniques.some((u) => u.definition === now.definition) && existed(now.table, now.columns)) found.push(`${now.table}: new unique index on existing columns (${now.definition})`);
  }
  for (const now of after.triggers) {
    if (before.tables.has(now.table) && !before.triggers.some((t) => t.table === now.table && t.name === now.name)) found.push(`${now.table}: trigger ${now.name} added`);
  }
  return found.sort();
}

const { databaseUrl } = testConfig();
const schema = databaseUrl ? `t_${randomBytes(6).toString('hex')}` : undefined;

describe('each migration only adds to the schema (expand/contract)', () => {
  let db: Db;
  /** Each migration's breaks of the rule, by name, in order. */
  const found = new Map<string, string[]>();

  beforeAll(async () => {
    db = await createDatabase({ databaseUrl: databaseUrl ?? null, dataDir: 'memory://', schema, image: databaseUrl ? undefined : await initdbImage() });
    let before = EMPTY;
    for (const name of Object.keys(await migrationProvider.getMigrations()).sort()) {
      await migrateToLatest(db, schema, name);
      const after = await snapshot(db);
      found.set(name, breaks(before, after));
      before = after;
    }
    // After the migrations, the move to monthly partitions: a step of the migration run, judged by the same rule.
    await migrateToLatest(db, schema);
    // The index definitions name the schema (public on PGlite, the test's own on PostgreSQL).
    found.set(MONTHLY_PARTITIONS, breaks(before, await snapshot(db)).map((line) => line.replace(/(ON (?:ONLY )?)\w+\./g, '$1')));
  }, 120_000);

  afterAll(async () => {
    await db?.destroy();
    if (databaseUrl && schema) await dropSchema(databaseUrl, schema);
  });

  it('finds every migration, and sees what each made', () => {
    expect(found.size).toBeGreaterThan(30);
    expect(found.has('032-partner-reference')).toBe(true);
  });

  it('leaves every table, column, type, nullability, unique index and word of the schema before it, but the reasoned historical exceptions', () => {
    const broken = Object.fromEntries([...found].filter(([, lines]) => lines.length > 0));
    const excepted = Object.fromEntries(Object.entries(HISTORICAL_EXCEPTIONS).map(([name, e]) => [name, [...e.breaks].sort()]));
    expect(broken).toEqual(excepted);
  });

  it('gives each historical exception its reason', () => {
    for (const [name, exception] of Object.entries(HISTORICAL_EXCEPTIONS)) expect(exception.reason.length, name).toBeGreaterThan(40);
  });

  it('would see a removal, a narrowing and a new required column', () => {
    const table = (columns: Column[], checks: Check[] = [], uniques: UniqueIndex[] = []): Snapshot => ({
      tables: new Set(columns.map((c) => c.table)),
      columns: new Map(columns.map((c) => [`${c.table}.${c.column}`, c])),
      checks: new Map(checks.map((c) => [`${c.table}.${c.name}`, c])),
      uniques,
      triggers: [],
    });
    const col = (column: string, more: Partial<Column> = {}): Column => ({ table: 't', column, type: 'text', notNull: false, hasDefault: false, ...more });
    const words = (...w: string[]): Check => ({ table: 't', name: 't_s_check', definition: `CHECK ((s = ANY (ARRAY[${w.map((x) => `'${x}'::text`).join(', ')}])))`, columns: ['s'] });
    const unique: UniqueIndex = { table: 't', definition: 'CREATE UNIQUE INDEX t_a_key ON t USING btree (a)', columns: ['a'] };
    const before = table([col('a'), col('s')], [words('x', 'y')], [unique]);
    expect(breaks(before, table([col('a'), col('s')], [words('x', 'y', 'z')], [unique]))).toEqual([]);
    expect(breaks(before, table([col('a'), col('s'), col('n', { notNull: true, hasDefault: true })], [words('x', 'y')], [unique]))).toEqual([]);
    expect(breaks(before, table([col('s', { type: 'integer' }), col('n', { notNull: true })], [words('x')]))).toEqual([
      't.a: column removed',
      't.n: added NOT NULL without a default',
      't.s: type text became integer',
      `t: check t_s_check changed from ${words('x', 'y').definition} to ${words('x').definition}`,
      `t: unique index removed (${unique.definition})`,
    ].sort());
  });
});
