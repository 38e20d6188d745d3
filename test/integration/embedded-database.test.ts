import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { afterAll, describe, expect, it } from 'vitest';
import { createDatabase } from '../../src/db/database.js';
import { databaseImage } from '../helpers/database-image.js';

/**
 * The embedded database's buffer cache lives in its WebAssembly memory, which never shrinks, so
 * its size bounds the service's memory on the default store: on disk (npm start) and in memory.
 */
describe('the embedded database', () => {
  const dir = mkdtempSync(join(tmpdir(), 'gpc-embedded-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  // On disk and in memory from scratch, the cluster is made by initdb in a child process; the
  // suite's other tests start from the run's image instead.
  it.each([
    ['on disk', join(dir, 'data'), false],
    ['in memory (made by initdb)', 'memory://', false],
    ['in memory (from an image)', 'memory://', true],
  ])('runs %s with a 32 MB buffer cache, not initdb\'s 128 MB', async (_where, dataDir, fromImage) => {
    const db = await createDatabase({ databaseUrl: null, dataDir, image: fromImage ? await databaseImage() : undefined });
    try {
      const { rows } = await sql<{ shared_buffers: string }>`SHOW shared_buffers`.execute(db);
      expect(rows[0]?.shared_buffers).toBe('32MB');
    } finally {
      await db.destroy();
    }
  });
});
