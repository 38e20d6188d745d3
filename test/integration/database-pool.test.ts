import { randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testConfig } from '../helpers/test-config.js';
import { createDatabase, type Db } from '../../src/db/database.js';
import { isDatabaseUnavailable } from '../../src/db/pg-error.js';

const { databaseUrl } = testConfig();
const schema = `t_${randomBytes(6).toString('hex')}`;

describe.skipIf(!databaseUrl)('PostgreSQL pool', { tags: ['postgres'] }, () => {
  let db: Db;
  const poolErrors: Error[] = [];
  const url = databaseUrl as string;

  beforeAll(async () => {
    db = await createDatabase({ databaseUrl: url, dataDir: '', schema, poolSize: 1, onConnectionError: (err) => poolErrors.push(err) });
  });

  afterAll(async () => {
    await db?.destroy();
    const admin = new pg.Client({ connectionString: url });
    await admin.connect();
    await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await admin.end();
  });

  const backendPid = async () => (await sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(db)).rows[0]?.pid;

  it('runs a repeated statement as a prepared statement on its connection', async () => {
    for (let i = 0; i < 3; i++) {
      const { rows } = await sql<{ n: number }>`select ${i}::int + 1 as n`.execute(db);
      expect(rows[0]?.n).toBe(i + 1);
    }
    const { rows } = await sql<{ name: string; statement: string }>`select name, statement from pg_prepared_statements`.execute(db);
    expect(rows.some((r) => r.name.startsWith('gpc_') && r.statement.includes('+ 1 as n'))).toBe(true);
  });

  it('prepares a statement again when a migration changed its table under it', async () => {
    await sql`create table rolling (id int primary key)`.execute(db);
    await sql`insert into rolling values (1)`.execute(db);
    const read = () => sql<Record<string, unknown>>`select * from rolling where id = ${1}`.execute(db);
    for (let i = 0; i < 3; i++) expect((await read()).rows).toEqual([{ id: 1 }]);
    // What another instance's migration does during a rolling deploy.
    await sql`alter table rolling add column note text default 'added'`.execute(db);
    expect((await read()).rows).toEqual([{ id: 1, note: 'added' }]);
    expect((await read()).rows).toEqual([{ id: 1, note: 'added' }]);
  });

  it('refuses a statement made stale by a migration inside a transaction, and prepares it again outside one', async () => {
    await sql`create table rolling_in_trx (id int primary key)`.execute(db);
    await sql`insert into rolling_in_trx values (1)`.execute(db);
    const read = (on: Db) => sql<Record<string, unknown>>`select * from rolling_in_trx where id = ${1}`.execute(on);
    for (let i = 0; i < 3; i++) expect((await read(db)).rows).toEqual([{ id: 1 }]);
    await sql`alter table rolling_in_trx add column note text default 'added'`.execute(db);
    // The refusal aborts the transaction: nothing can be prepared again in it, so the caller sees it.
    await expect(db.transaction().execute((trx) => read(trx))).rejects.toThrow(/cached plan must not change result type/);
    expect((await read(db)).rows).toEqual([{ id: 1, note: 'added' }]);
    expect((await read(db)).rows).toEqual([{ id: 1, note: 'added' }]);
  });

  it('survives its idle connection being killed and answers on a new one', async () => {
    const pid = await backendPid();
    const admin = new pg.Client({ connectionString: url });
    await admin.connect();
    try {
      await admin.query('select pg_terminate_backend($1)', [pid]);
    } finally {
      await admin.end();
    }
    await expect.poll(() => poolErrors.length, { timeout: 5000 }).toBeGreaterThan(0);
    const again = await backendPid();
    expect(again).toBeDefined();
    expect(again).not.toBe(pid);
    // The new connection has no prepared statements yet; the repeated text is prepared there again.
    for (let i = 0; i < 2; i++) await sql`select ${i}::int + 1 as n`.execute(db);
  });

  it('survives the connection of a transaction in progress being killed, and the transaction leaves nothing', async () => {
    await sql`create table cut_short (id int primary key)`.execute(db);
    const seen = poolErrors.length;
    const cut = db.transaction().execute(async (trx) => {
      await sql`insert into cut_short values (1)`.execute(trx);
      const { rows } = await sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(trx);
      const admin = new pg.Client({ connectionString: url });
      await admin.connect();
      try {
        await admin.query('select pg_terminate_backend($1)', [rows[0]?.pid]);
      } finally {
        await admin.end();
      }
      // The checked-out connection reports its loss as an 'error' event: with no listener of its
      // own, that event would end the process.
      await expect.poll(() => poolErrors.length, { timeout: 5000 }).toBeGreaterThan(seen);
      await sql`insert into cut_short values (2)`.execute(trx);
    });
    const failure = await cut.then(() => null, (err: unknown) => err);
    expect(isDatabaseUnavailable(failure)).toBe(true);
    const { rows } = await sql<{ n: number }>`select count(*)::int as n from cut_short`.execute(db);
    expect(rows[0]?.n).toBe(0);
  });
});
