import { afterEach, describe, expect, it } from 'vitest';
import type { EmbeddedDatabase } from '../../src/db/database.js';
import { pooledEmbeddedDatabase } from '../helpers/embedded-database-pool.js';
import { testConfig } from '../helpers/test-config.js';

/*
 * The test contexts of a worker reuse embedded databases (test/helpers/embedded-database-pool.ts).
 * Each context must still find the database as the image holds it, whatever the one before did,
 * and a service must not reach the database once it has closed it.
 */

const open: EmbeddedDatabase[] = [];
afterEach(async () => {
  for (const db of open.splice(0)) await db.close();
});

async function database(): Promise<EmbeddedDatabase> {
  const db = await pooledEmbeddedDatabase();
  if (!db) throw new Error('no embedded database: the run has no image');
  open.push(db);
  return db;
}

async function count(db: EmbeddedDatabase, table: string): Promise<number> {
  return (await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${table}`)).rows[0]?.n ?? -1;
}

async function newPartner(db: EmbeddedDatabase): Promise<string> {
  const row = await db.query<{ id: string }>(`INSERT INTO partners (name, qr_standard, environment) VALUES ('pool', 'qrpay', 'sandbox') RETURNING id`);
  return row.rows[0]?.id ?? '';
}

/** A row of a table whose id comes from a sequence, and that id. */
async function auditRow(db: EmbeddedDatabase): Promise<number> {
  const row = await db.query<{ id: number }>(
    `INSERT INTO audit_log (operator, action, target_type, target_id, created_at) VALUES ('op', 'test', 'partner', 'x', now()) RETURNING id::int AS id`,
  );
  return row.rows[0]?.id ?? -1;
}

describe.skipIf(Boolean(testConfig().databaseUrl))("the test contexts' reused embedded databases", () => {
  it('give the next context the image: no rows of the last one, sequences from the start, the image rows back', async () => {
    const first = await database();
    const image = (await first.query<{ row: string }>('SELECT row_to_json(e)::text AS row FROM event_positions e')).rows;
    expect(image).toHaveLength(1);
    await newPartner(first);
    const firstAudit = await auditRow(first);
    await auditRow(first);
    await first.exec('DELETE FROM event_positions');
    await first.close();

    const next = await database();
    expect(await count(next, 'partners')).toBe(0);
    expect(await count(next, 'audit_log')).toBe(0);
    expect(await auditRow(next)).toBe(firstAudit);
    expect((await next.query<{ row: string }>('SELECT row_to_json(e)::text AS row FROM event_positions e')).rows).toEqual(image);
  });

  it('refuse every statement of a service that closed its database, even one the next context is using', async () => {
    const first = await database();
    await first.close();
    const next = await database();
    await expect(first.query('SELECT 1')).rejects.toThrow(/closed with its service/);
    await expect(first.exec('DELETE FROM partners')).rejects.toThrow(/closed with its service/);
    await newPartner(next);
    expect(await count(next, 'partners')).toBe(1);
  });

  it('give the next context the image after a close in the middle of a transaction, or after a schema change', async () => {
    const first = await database();
    await first.exec(`BEGIN; INSERT INTO partners (name, qr_standard, environment) VALUES ('pool', 'qrpay', 'sandbox')`);
    await first.close();
    const second = await database();
    expect(second.isInTransaction()).toBe(false);
    expect(await count(second, 'partners')).toBe(0);
    await second.exec('ALTER TABLE partners ADD COLUMN pool_test int');
    await second.close();

    const third = await database();
    const columns = await third.query(`SELECT 1 FROM information_schema.columns WHERE table_name = 'partners' AND column_name = 'pool_test'`);
    expect(columns.rows).toEqual([]);
  });

  it('give contexts alive at once databases of their own', async () => {
    const [a, b] = [await database(), await database()];
    await newPartner(a);
    expect(await count(a, 'partners')).toBe(1);
    expect(await count(b, 'partners')).toBe(0);
  });
});
