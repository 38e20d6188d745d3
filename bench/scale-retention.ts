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
}

const TABLES = ['invoices', 'partner_invoices', 'payments', 'payment_invoices', 'idempotency_keys', 'events', 'webhook_deliveries', 'webhook_attempts', 'counters', 'counter_deltas'];

/** Exact row counts (a count per table is fine for a bench) and on-disk size with indexes and TOAST. */
export async function tableSizes(url: string): Promise<TableSize[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const out: TableSize[] = [];
    for (const table of TABLES) {
      const { rows } = await client.query<{ n: string; bytes: string }>(`SELECT (SELECT count(*) FROM ${table}) AS n, pg_total_relation_size('${table}') AS bytes`);
      out.push({ table, rows: Number(rows[0]?.n ?? 0), mb: Math.round(Number(rows[0]?.bytes ?? 0) / 1048576) });
    }
    return out;
  } finally {
    await client.end();
  }
}

/**
 * Runs the retention sweep's passes until one deletes nothing (with a larger batch than the
 * service's per-minute pass, to clear a year's backlog in minutes), then VACUUMs so the freed space
 * is reusable: from then on new rows fill it instead of growing the files.
 */
export async function sweepToSteadyState(url: string, batch = 20_000): Promise<{ seconds: number; deleted: Record<string, number> }> {
  const settings = loadConfig({}).retention;
  const db = await createDatabase({ databaseUrl: url, dataDir: '' });
  const idempotency = createIdempotencyRepository(db);
  const retention = createRetentionRepository(db);
  const deleted = { idempotencyKeys: 0, attempts: 0, deliveries: 0, events: 0 };
  const start = performance.now();
  try {
    for (;;) {
      const now = Date.now();
      const keys = await idempotency.purgeExpired(new Date(now), batch);
      const swept = await retention.sweep(await createPartitionRepository(db).legacyTables(), { attemptsBefore: new Date(now - settings.webhookAttemptMs), eventsBefore: new Date(now - settings.eventMs) }, batch);
      deleted.idempotencyKeys += keys;
      deleted.attempts += swept.attempts;
      deleted.deliveries += swept.deliveries;
      deleted.events += swept.events;
      if (keys + swept.attempts + swept.deliveries + swept.events === 0) break;
    }
  } finally {
    await db.destroy();
  }
  const seconds = (performance.now() - start) / 1000;
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  await client.query('VACUUM ANALYZE').finally(() => client.end());
  return { seconds, deleted };
}
