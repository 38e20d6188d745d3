import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { sql } from 'kysely';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { createDatabase, migrateToLatest, type Db } from '../../src/db/database.js';
import { testConfig } from '../helpers/test-config.js';
import { dropSchema } from '../helpers/test-context.js';
import { initdbImage } from '../helpers/database-image.js';

const { databaseUrl } = testConfig();
/** The last migration before 035. */
const BEFORE = '033-cases';
const PAYMENTS_UNCHECKED = `CREATE INDEX CONCURRENTLY payments_unchecked_idx ON payments (source, (coalesce(status_checked_at, submitted_at, created_at))) WHERE status = 'submitted'`;

describe('migration 035 (the indexes of the scrape gauges)', () => {
  const cleanups: (() => Promise<unknown>)[] = [];
  afterEach(async () => {
    for (const clean of cleanups.splice(0).reverse()) await clean();
  });

  async function databaseBefore035(): Promise<{ db: Db; schema: string | undefined }> {
    const schema = databaseUrl ? `t_${randomBytes(6).toString('hex')}` : undefined;
    const db = await createDatabase({ databaseUrl: databaseUrl ?? null, dataDir: 'memory://', schema, image: databaseUrl ? undefined : await initdbImage() });
    cleanups.push(async () => {
      await db.destroy();
      if (databaseUrl && schema) await dropSchema(databaseUrl, schema);
    });
    await migrateToLatest(db, schema, BEFORE);
    return { db, schema };
  }

  const indexes = async (db: Db) =>
    (await sql<{ name: string }>`
      SELECT indexname AS name FROM pg_indexes
      WHERE schemaname = current_schema() AND indexname IN ('payments_unchecked_idx', 'reconciliation_sources_completed_idx') ORDER BY 1`.execute(db)).rows.map((r) => r.name);

  it('builds both partial indexes', async () => {
    const { db, schema } = await databaseBefore035();
    expect(await indexes(db)).toEqual([]);
    await migrateToLatest(db, schema);
    expect(await indexes(db)).toEqual(['payments_unchecked_idx', 'reconciliation_sources_completed_idx']);
  });

  // PGlite serves one connection: no second one can hold the lock a write holds.
  it.skipIf(!databaseUrl)('leaves payments alone when its index was built beforehand: writes under way do not hold it up', { tags: ['postgres'] }, async () => {
    const { db, schema } = await databaseBefore035();
    const client = async () => {
      const c = new pg.Client({ connectionString: databaseUrl ?? undefined, options: `-c search_path=${schema}` });
      await c.connect();
      cleanups.push(() => c.end());
      return c;
    };
    await (await client()).query(PAYMENTS_UNCHECKED);
    // A write to payments under way: a CREATE INDEX would wait for it.
    const writer = await client();
    await writer.query('BEGIN');
    await writer.query('LOCK TABLE payments IN ROW EXCLUSIVE MODE');
    cleanups.push(() => writer.query('ROLLBACK'));

    const watcher = await client();
    const waitingOnPayments = async () =>
      (await watcher.query<{ n: number }>(`
        SELECT count(*)::int AS n FROM pg_locks l JOIN pg_class c ON c.oid = l.relation
        WHERE NOT l.granted AND c.relname = 'payments' AND c.relnamespace = current_schema()::regnamespace`)).rows[0]?.n ?? 0;
    let done = false;
    const migrated = migrateToLatest(db, schema).finally(() => {
      done = true;
    });
    let waited = false;
    while (!done && !waited) {
      waited = (await waitingOnPayments()) > 0;
      if (!waited) await sleep(20);
    }
    if (waited) await writer.query('ROLLBACK');
    await migrated;

    expect(waited, 'the migration waited for a lock on payments').toBe(false);
    expect(await indexes(db)).toEqual(['payments_unchecked_idx', 'reconciliation_sources_completed_idx']);
  });
});
