import { randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testConfig } from '../helpers/test-config.js';
import { createDatabase, type Db } from '../../src/db/database.js';
import { createWorkPriority } from '../../src/db/work-priority.js';

const { databaseUrl } = testConfig();
const schema = `t_${randomBytes(6).toString('hex')}`;
const POOL = 4;
const PASS_QUERIES = 24;

describe.skipIf(!databaseUrl)('requests first on PostgreSQL', { tags: ['postgres'] }, () => {
  const priority = createWorkPriority();
  const url = databaseUrl as string;
  let db: Db;

  beforeAll(async () => {
    db = await createDatabase({ databaseUrl: url, dataDir: '', schema, poolSize: POOL, priority });
  });

  afterAll(async () => {
    await db?.destroy();
    const admin = new pg.Client({ connectionString: url });
    await admin.connect();
    await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await admin.end();
  });

  it('serves a request that arrives during a background pass ahead of the rest of the pass', async () => {
    let passDone = 0;
    // A pass of many short statements at once, as a confirmation pass runs its checks: more than the pool holds.
    const pass = priority.background(() =>
      Promise.all(
        Array.from({ length: PASS_QUERIES }, async () => {
          await sql`select pg_sleep(0.05)`.execute(db);
          passDone++;
        }),
      ),
    );
    await new Promise((resolve) => setTimeout(resolve, 20));
    const requestOver = priority.requestStarted();
    let doneWhenAnswered: number;
    try {
      await sql`select 1`.execute(db);
      doneWhenAnswered = passDone;
    } finally {
      requestOver();
    }
    await pass;
    expect(passDone).toBe(PASS_QUERIES);
    // Queued behind the pass in the pool, the request would be answered after nearly all of it.
    expect(doneWhenAnswered).toBeLessThanOrEqual(2 * POOL);
  });
});
