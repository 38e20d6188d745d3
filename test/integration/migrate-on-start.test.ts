import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDatabase, migrateToLatest, migrationProvider, readSchemaState, type Db } from '../../src/db/database.js';
import { testConfig } from '../helpers/test-config.js';
import { initdbImage } from '../helpers/database-image.js';
import { createDatabase as createPgDatabase, queryOnce } from '../helpers/pg-query.js';
import { serviceEnv, startApiProcess } from '../helpers/api-process.js';
import { runEntry, STACK_LINE } from '../helpers/entry-process.js';
import { freePorts } from '../walkthrough/walkthrough.js';

/*
 * MIGRATE_ON_START=false: the migrations are a deploy step of their own (`npm run migrate`), and a
 * service on a schema older than its code refuses to start; on a schema a newer release migrated
 * it serves (each migration only adds). Real processes, as an operator starts them, on the
 * embedded database on disk or on a PostgreSQL database of their own.
 */
const { databaseUrl } = testConfig();
const ADMIN_TOKEN = 'migrate-admin-token';
/** A migration only a later release has, as its rows in kysely_migration show it. */
const NEWER = '999-from-a-later-release';

interface TestDatabase {
  /** What names it to a process: DATABASE_URL, or DATA_DIR. */
  env: Record<string, string>;
  open(): Promise<Db>;
  drop(): Promise<void>;
}

/** A new database: its own on the PostgreSQL server, or an embedded cluster in a directory of its own. */
async function newDatabase(): Promise<TestDatabase> {
  if (databaseUrl) {
    const name = `migrate_${randomBytes(5).toString('hex')}`;
    const url = await createPgDatabase(databaseUrl, name);
    return {
      env: { DATABASE_URL: url },
      open: () => createDatabase({ databaseUrl: url, dataDir: '' }),
      drop: async () => {
        await queryOnce(databaseUrl, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      },
    };
  }
  const dir = await mkdtemp(join(tmpdir(), 'migrate-on-start-'));
  // The run's initdb image, so no process here spends its seconds of initdb.
  const cluster = await PGlite.create({ dataDir: dir, loadDataDir: await initdbImage() });
  await cluster.close();
  return { env: { DATA_DIR: dir }, open: () => createDatabase({ databaseUrl: null, dataDir: dir }), drop: () => rm(dir, { recursive: true, force: true }) };
}

/** Runs `change` on the database, closed again before a process opens it (the embedded one takes one process at a time). */
async function onDatabase<T>(database: TestDatabase, change: (db: Db) => Promise<T>): Promise<T> {
  const db = await database.open();
  try {
    return await change(db);
  } finally {
    await db.destroy();
  }
}

// One process at a time: the other test worker's timing-bound tests share the machine's two cores.
describe('migrations as a step of their own (MIGRATE_ON_START=false)', () => {
  const databases: TestDatabase[] = [];
  let names: string[];
  let latest: string;
  let previous: string;

  const env = async (database: TestDatabase, extra: Record<string, string>) => {
    const [port = 0, adminPort = 0] = await freePorts(2);
    const base = serviceEnv({ databaseUrl: database.env.DATABASE_URL ?? '', port, adminPort, adminToken: ADMIN_TOKEN, ministryUrl: 'http://127.0.0.1:9' });
    return { env: { ...base, ...database.env, ...extra }, readyUrl: `http://127.0.0.1:${port}/api/v1/health/ready` };
  };

  beforeAll(async () => {
    names = Object.keys(await migrationProvider.getMigrations()).sort();
    latest = names.at(-1) ?? '';
    previous = names.at(-2) ?? '';
  });

  afterAll(async () => {
    await Promise.all(databases.map((d) => d.drop()));
  });

  it('refuses to start on a schema older than its code, naming the missing migration and the command, then serves once `npm run migrate` has run', async () => {
    const database = await newDatabase();
    databases.push(database);
    await onDatabase(database, (db) => migrateToLatest(db, undefined, previous));

    const { env: refusedEnv } = await env(database, { MIGRATE_ON_START: 'false' });
    const refused = await runEntry('src/bin/api.ts', refusedEnv);
    expect(refused.code).toBe(1);
    const lines = refused.stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toBe(
      `failed to start: the database schema is older than this code: migration ${latest} not applied; run \`npm run migrate\` (in the image: node dist/src/bin/migrate.js) first, or set MIGRATE_ON_START=true`,
    );
    expect(refused.stderr).not.toMatch(STACK_LINE);
    // Nothing was applied by the refused start.
    expect((await onDatabase(database, (db) => readSchemaState(db))).pending).toEqual([latest]);

    const migrated = await runEntry('src/bin/migrate.ts', database.env);
    expect(migrated).toMatchObject({ code: 0, stdout: `applied ${latest}\n` });

    const { env: servingEnv, readyUrl } = await env(database, { MIGRATE_ON_START: 'false' });
    const service = await startApiProcess('migrate-on-start-migrated', servingEnv, readyUrl);
    await service.stop();
  }, 240_000);

  it('serves on a schema a newer release migrated, with or without MIGRATE_ON_START, and warns once', async () => {
    const database = await newDatabase();
    databases.push(database);
    await onDatabase(database, async (db) => {
      await migrateToLatest(db);
      await sql`INSERT INTO kysely_migration (name, timestamp) VALUES (${NEWER}, ${new Date().toISOString()})`.execute(db);
    });

    for (const migrateOnStart of ['false', 'true']) {
      const { env: serviceEnvironment, readyUrl } = await env(database, { MIGRATE_ON_START: migrateOnStart });
      const service = await startApiProcess(`migrate-on-start-newer-${migrateOnStart}`, serviceEnvironment, readyUrl);
      await service.stop();
      const warnings = (await readFile(service.logFile, 'utf8'))
        .split('\n')
        .filter((line) => line.startsWith('{'))
        .map((line) => JSON.parse(line) as { level: number; msg: string; unknownMigrations?: string[] })
        .filter((entry) => entry.unknownMigrations);
      expect(warnings, `MIGRATE_ON_START=${migrateOnStart}`).toEqual([expect.objectContaining({ level: 40, unknownMigrations: [NEWER], msg: expect.stringContaining('newer than this code') })]);
    }

    // The step of this (older) release has nothing to apply and says why.
    const step = await runEntry('src/bin/migrate.ts', database.env);
    expect(step.code).toBe(0);
    expect(step.stdout).toContain(`already at ${latest}`);
    expect(step.stdout).toContain(`the database also has ${NEWER}`);
    const state = await onDatabase(database, (db) => readSchemaState(db));
    expect(state).toMatchObject({ pending: [], unknown: [NEWER] });
  }, 240_000);

  it('refuses a database migrated by another line of releases, which is neither older nor newer', async () => {
    const database = await newDatabase();
    databases.push(database);
    await onDatabase(database, async (db) => {
      await migrateToLatest(db, undefined, previous);
      await sql`INSERT INTO kysely_migration (name, timestamp) VALUES (${NEWER}, ${new Date().toISOString()})`.execute(db);
    });
    const step = await runEntry('src/bin/migrate.ts', database.env);
    expect(step.code).toBe(1);
    expect(step.stderr.trim()).toBe(`migrate: the database has migrations this code does not (${NEWER}) and lacks some it has (${latest}); it was migrated by another line of releases`);
  }, 120_000);
});
