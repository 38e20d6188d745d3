import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
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
    /** The same cluster as initdb left it, before any migration. */
    initdbImagePath: string | null;
  }
}

const STALE_IMAGE_MS = 60 * 60 * 1000;

/**
 * What the image is made from: the migrations, the code that runs them, this file and the
 * versions of PGlite and Kysely. A change to any of them makes a new image.
 */
function imageKey(root: string): string {
  const migrations = join(root, 'src/db/migrations');
  const files = [
    fileURLToPath(import.meta.url),
    join(root, 'src/db/database.ts'),
    ...readdirSync(migrations).sort().map((f) => join(migrations, f)),
    join(root, 'node_modules/@electric-sql/pglite/package.json'),
    join(root, 'node_modules/kysely/package.json'),
  ];
  const hash = createHash('sha256');
  for (const file of files) hash.update(file).update(readFileSync(file));
  return hash.digest('hex').slice(0, 24);
}

async function makeImages(): Promise<{ initdb: Buffer; migrated: Buffer }> {
  const client = await PGlite.create();
  try {
    const initdb = Buffer.from(await (await client.dumpDataDir('none')).arrayBuffer());
    await migrateToLatest(new Kysely<Database>({ dialect: new PGliteDialect(client) }));
    // Every context unpacks the image file by file, and the two template databases are half its
    // files: without them a context's database starts in about half the time and CPU. Nothing the
    // service or a test does on the embedded database creates a database from a template.
    await client.query(`UPDATE pg_database SET datistemplate = false WHERE datname IN ('template0', 'template1')`);
    for (const template of ['template0', 'template1']) await client.query(`DROP DATABASE ${template}`);
    await client.query('CHECKPOINT');
    return { initdb, migrated: Buffer.from(await (await client.dumpDataDir('none')).arrayBuffer()) };
  } finally {
    await client.close();
  }
}

/**
 * Migrates one in-memory PGlite and saves its image (and the one initdb made, for the tests of a
 * migration on data written before it), so the suite's test contexts start from it
 * (under a second) instead of each creating a cluster and migrating (several seconds). The image
 * is kept in node_modules/.cache between runs: making it (PGlite's initdb, mostly) took 3 s before
 * any test could start, a quarter of a one-file run. Not on PostgreSQL, where a context's schema
 * migrates in a fraction of a second.
 */
export default async function setup(project: TestProject): Promise<void> {
  if (process.env.DATABASE_URL) {
    project.provide('databaseImagePath', null);
    project.provide('initdbImagePath', null);
    return;
  }
  const root = project.config.root;
  const dir = join(root, 'node_modules/.cache/test-database-image');
  const key = imageKey(root);
  const path = join(dir, `${key}.tar`);
  const initdbPath = join(dir, `${key}-initdb.tar`);
  if (!existsSync(path) || !existsSync(initdbPath)) {
    mkdirSync(dir, { recursive: true });
    const images = await makeImages();
    // Written aside and renamed, so a run started meanwhile never reads half an image.
    for (const [to, bytes] of [[initdbPath, images.initdb], [path, images.migrated]] as const) {
      const partial = `${to}.${process.pid}.partial`;
      writeFileSync(partial, bytes);
      renameSync(partial, to);
    }
    // Older images go once no run can still be reading them (a run reads its image as each file starts).
    for (const name of readdirSync(dir)) {
      const other = join(dir, name);
      // Another run may have removed it since the listing.
      const madeAt = statSync(other, { throwIfNoEntry: false })?.mtimeMs;
      if (other !== path && other !== initdbPath && madeAt !== undefined && Date.now() - madeAt > STALE_IMAGE_MS) rmSync(other, { force: true });
    }
  }
  project.provide('databaseImagePath', path);
  project.provide('initdbImagePath', initdbPath);
}
