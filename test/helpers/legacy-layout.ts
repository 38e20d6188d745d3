import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { createDatabase, migrateToLatest, type Db } from '../../src/db/database.js';
import { createTestContext, dropSchema, type ContextOptions, type TestContext } from './test-context.js';
import { testConfig } from './test-config.js';

/** The last migration before the tables that only grow were partitioned by month. */
export const BEFORE_PARTITIONS = '033-cases';

/** One row in each of the four tables, as a database in service before the partitions holds. */
export async function seedOneOfEach(db: Db): Promise<void> {
  await sql`
    WITH p AS (INSERT INTO partners (name, qr_standard, environment) VALUES ('Legacy bank', 'qrpay', 'sandbox') RETURNING id),
    w AS (INSERT INTO webhooks (partner_id, url, events, secret_ciphertext) SELECT id, 'https://hooks.example.com/legacy', '["payment.confirmed"]', 'x' FROM p RETURNING id, partner_id),
    d AS (INSERT INTO devices (partner_id, user_id, fcm_token, platform) SELECT id, 'u-legacy', 'token-legacy', 'android' FROM p RETURNING id, partner_id),
    e AS (INSERT INTO events (partner_id, event, payload) SELECT id, 'payment.confirmed', '{}' FROM p RETURNING id, partner_id, created_at),
    wd AS (INSERT INTO webhook_deliveries (webhook_id, event_id, status, next_attempt_at, created_at) SELECT w.id, e.id, 'delivered', now(), e.created_at FROM w, e RETURNING id, webhook_id),
    wa AS (INSERT INTO webhook_attempts (delivery_id, webhook_id, attempt, succeeded, duration_ms) SELECT id, webhook_id, 1, true, 5 FROM wd RETURNING id)
    INSERT INTO push_deliveries (event_id, partner_id, device_id, status, next_attempt_at, created_at)
    SELECT e.id, e.partner_id, d.id, 'delivered', now(), e.created_at FROM e, d`.execute(db);
}

/**
 * A whole service whose events, deliveries, attempts and pushes are legacy partitions: the
 * database was in service before the move to monthly partitions (migrated to 033 with a row in each
 * table), then this code's start moved it. Every row dated before the cutover lands in the legacy
 * partitions, where retention deletes row by row.
 */
export async function legacyLayoutContext(opts: ContextOptions = {}): Promise<TestContext> {
  const { databaseUrl } = testConfig();
  const schema = databaseUrl ? `t_${randomBytes(6).toString('hex')}` : undefined;
  const dataDir = databaseUrl ? undefined : await mkdtemp(join(tmpdir(), 'legacy-layout-'));
  const db = await createDatabase({ databaseUrl: databaseUrl ?? null, dataDir: dataDir ?? 'memory://', schema });
  try {
    await migrateToLatest(db, schema, BEFORE_PARTITIONS);
    await seedOneOfEach(db);
  } finally {
    await db.destroy();
  }
  const ctx = await createTestContext({ ...opts, reuseSchema: schema, config: { ...opts.config, ...(dataDir ? { dataDir } : {}) } });
  return {
    ...ctx,
    async close() {
      await ctx.close();
      if (databaseUrl && schema) await dropSchema(databaseUrl, schema);
      if (dataDir) await rm(dataDir, { recursive: true, force: true });
    },
  };
}
