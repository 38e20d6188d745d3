import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDatabase, migrateToLatest, type Db } from '../../src/db/database.js';
import { DB_TYPES_FILE, REGENERATE_COMMAND, generateDbTypes } from '../../scripts/db-types.generator.js';
import { testConfig } from '../helpers/test-config.js';
import { dropSchema } from '../helpers/test-context.js';
import { initdbImage } from '../helpers/database-image.js';

const { databaseUrl } = testConfig();
const schema = databaseUrl ? `t_${randomBytes(6).toString('hex')}` : undefined;

/*
 * src/db/db.types.ts is generated from the migrated schema and checked in; this fails a migration
 * committed without it regenerated, and an edit made by hand.
 */
describe('src/db/db.types.ts', () => {
  let db: Db;
  beforeAll(async () => {
    // A fresh database: PGlite as initdb left it, or a new PostgreSQL schema.
    db = await createDatabase({ databaseUrl: databaseUrl ?? null, dataDir: 'memory://', schema, image: databaseUrl ? undefined : await initdbImage() });
    await migrateToLatest(db, schema);
  });
  afterAll(async () => {
    await db?.destroy();
    if (databaseUrl && schema) await dropSchema(databaseUrl, schema);
  });

  it('is what the migrations make of it', async () => {
    const generated = await generateDbTypes(db, schema);
    expect(readFileSync(DB_TYPES_FILE, 'utf8'), `src/db/db.types.ts is not what the migrations make: run \`${REGENERATE_COMMAND}\``).toBe(generated);
  });
});
