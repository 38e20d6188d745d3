import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { PGlite } from '@electric-sql/pglite';
import { Kysely } from 'kysely';
import { PGliteDialect } from 'kysely-pglite-dialect';
import { migrateToLatest } from '../../src/db/database.js';
import type { Database } from '../../src/db/db.types.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** A migrated PGlite database image on disk, which every test context on PGlite starts from. */
    databaseImagePath: string | null;
  }
}

/**
 * Migrates one in-memory PGlite per run and saves its image, so the suite's test contexts start
 * from it (under a second) instead of each creating a cluster and migrating (several seconds).
 * Not on PostgreSQL, where a context's schema migrates in a fraction of a second.
 */
export default async function setup(project: TestProject): Promise<() => void> {
  if (process.env.DATABASE_URL) {
    project.provide('databaseImagePath', null);
    return () => undefined;
  }
  const client = await PGlite.create();
  await migrateToLatest(new Kysely<Database>({ dialect: new PGliteDialect(client) }));
  // Every context unpacks the image file by file, and the two template databases are half its
  // files: without them a context's database starts in about half the time and CPU. Nothing the
  // service or a test does on the embedded database creates a database from a template.
  await client.query(`UPDATE pg_database SET datistemplate = false WHERE datname IN ('template0', 'template1')`);
  for (const template of ['template0', 'template1']) await client.query(`DROP DATABASE ${template}`);
  await client.query('CHECKPOINT');
  const dir = mkdtempSync(join(tmpdir(), 'gpc-db-image-'));
  const path = join(dir, 'migrated.tar');
  writeFileSync(path, Buffer.from(await (await client.dumpDataDir('none')).arrayBuffer()));
  await client.close();
  project.provide('databaseImagePath', path);
  return () => rmSync(dir, { recursive: true, force: true });
}
