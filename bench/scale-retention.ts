/**
 * Storage of the scale bench: each table's rows and size, and the retention sweep run to its
 * steady state with the service's default retention settings, so the tables that only grew
 * without it are shown holding just their retention window.
 */
import { performance } from 'node:perf_hooks';
import pg from 'pg';
import { loadConfig } from '../src/config/config.js';
import { createDatabase } from '../src/db/database.js';
import { createIdempotencyRepository } from '../src/db/repositories/idempotency.repository.js';
import { createRetentionRepository } from '../src/db/repositories/retention.repository.js';
import { createPartitionRepository } from '../src/db/repositories/partition.repository.js';

export interface TableSize {
  table: string;
  rows: number;
  mb: number;
  /** Its leaf partitions when it is partitioned (declarative partitioning); 0 for a plain table. */
  partitions: number;
}

const TABLES = [
  'invoices', 'partner_invoices', 'payments', 'payment_invoices', 'idempotency_keys', 'events', 'webhook_deliveries', 'webhook_attempts', 'counters', 'counter_deltas',
  'push_deliveries', 'discrepancies', 'cases', 'audit_log',
];

/**
 * Exact row counts (a count per table is fine for a bench) and on-disk size with indexes and TOAST.
 * A partitioned parent holds no rows of its own (its pg_total_relation_size is 0), so the size is
 * summed over its partition tree; pg_partition_tree lists nothing for a plain table, which is
 * then measured itself.
 */
export async function tableSizes(url: string): Promise<TableSize[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const out: TableSize[] = [];
    for (const table of TABLES) {
      const { rows } = await client.query<{ n: string; bytes: string; partitions: number }>(
        `SELECT (SELECT count(*) FROM ${table}) AS n,
                coalesce((SELECT sum(pg_total_relation_size(relid)) FROM pg_partition_tree('${table}')), pg_total_relation_size('${table}')) AS bytes,
                (SELECT count(*)::int FROM pg_partition_tree('${table}') WHERE isleaf AND level > 0) AS partitions`,
      );
      out.push({ table, rows: Number(rows[0]?.n ?? 0), mb: Math.round(Number(rows[0]?.bytes ?? 0) / 1048576), partitions: rows[0]?.partitions ?? 0 });
    }
    return out;
  } finally {
    await client.end();
  }
}

/**
 * Runs the retention sweep's passes until one removes nothing (with a larger batch than the
 * service's per-minute pass, to clear a year's backlog in minutes), as the service's pass does:
 * the monthly partitions wholly past retention are dropped whole, and rows are deleted one by one
 * only from the legacy partitions and the idempotency keys. Then VACUUMs so the freed space is
 * reusable: from then on new rows fill it instead of growing the files.
 */
export async function sweepToSteadyState(url: string, batch = 20_000): Promise<{ seconds: number; deleted: Record<string, number>; months: MonthDrops }> {
  const settings = loadConfig({}).retention;
  const db = await createDatabase({ databaseUrl: url, dataDir: '' });
  const idempotency = createIdempotencyRepository(db);
  const retention = createRetentionRepository(db);
  const partitions = createPartitionRepository(db);
  const deleted = { idempotencyKeys: 0, attempts: 0, deliveries: 0, events: 0, 'partitions dropped': 0 };
  const months: MonthDrops = { months: 0, partitions: 0, seconds: 0, slowestMonthS: 0 };
  const start = performance.now();
  try {
    // First the months wholly past retention, one at a time as the pass would meet them month after month, each timed.
    for (;;) {
      const now = Date.now();
      const oldest = await oldestExpiredMonth(partitions, now, settings);
      if (!oldest) break;
      const began = performance.now();
      const { dropped } = await partitions.dropExpired({ attemptsBefore: oldest.attempts, eventsBefore: oldest.events });
      const took = (performance.now() - began) / 1000;
      if (dropped.length === 0) break;
      months.months++;
      months.partitions += dropped.length;
      months.seconds += took;
      months.slowestMonthS = Math.max(months.slowestMonthS, took);
      deleted['partitions dropped'] += dropped.length;
    }
    for (;;) {
      const now = Date.now();
      const cutoffs = { attemptsBefore: new Date(now - settings.webhookAttemptMs), eventsBefore: new Date(now - settings.eventMs) };
      const { dropped } = await partitions.dropExpired(cutoffs);
      const keys = await idempotency.purgeExpired(new Date(now), batch);
      const swept = await retention.sweep(await partitions.legacyTables(), cutoffs, batch);
      deleted['partitions dropped'] += dropped.length;
      deleted.idempotencyKeys += keys;
      deleted.attempts += swept.attempts;
      deleted.deliveries += swept.deliveries;
      deleted.events += swept.events;
      if (dropped.length + keys + swept.attempts + swept.deliveries + swept.events === 0) break;
    }
  } finally {
    await db.destroy();
  }
  const seconds = (performance.now() - start) / 1000;
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  await client.query('VACUUM ANALYZE').finally(() => client.end());
  return { seconds, deleted, months };
}

/** The month drops of a sweep: how many months (each its events, deliveries, pushes and attempts as they expire), and how long. */
export interface MonthDrops {
  months: number;
  partitions: number;
  seconds: number;
  slowestMonthS: number;
}

/**
 * Cut-offs that take only the oldest month past retention: its end, for whichever of the two
 * retentions (events, attempts) has a month that old. Null when no month is past either.
 */
async function oldestExpiredMonth(partitions: ReturnType<typeof createPartitionRepository>, now: number, settings: { webhookAttemptMs: number; eventMs: number }) {
  const ends = async (table: 'events' | 'webhook_attempts', before: number) =>
    (await partitions.partitionsOf(table)).map((p) => p.to?.getTime() ?? Infinity).filter((t) => t <= before).sort((a, b) => a - b)[0] ?? null;
  const events = await ends('events', now - settings.eventMs);
  const attempts = await ends('webhook_attempts', now - settings.webhookAttemptMs);
  if (events === null && attempts === null) return null;
  const end = Math.min(events ?? Infinity, attempts ?? Infinity);
  return { events: new Date(Math.min(end, now - settings.eventMs)), attempts: new Date(Math.min(end, now - settings.webhookAttemptMs)) };
}
