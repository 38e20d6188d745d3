import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import { createDatabase, createDatabasePinger, type Db, type DatabasePinger } from '../../src/db/database.js';
import { createDatabaseOutage, type DatabaseOutage } from '../../src/db/database-outage.monitor.js';
import { capturingLogger } from '../helpers/log-capture.js';
import { testConfig } from '../helpers/test-config.js';
import { startDatabaseProxy, type TcpProxy } from '../helpers/tcp-proxy.js';

/*
 * A failover that never closes the old primary's sockets: the pool's idle connections stay open
 * to a server that no longer answers. Once the database is back (new connections pass), none of
 * them may be handed out again.
 */
const { databaseUrl } = testConfig();
const QUERY_TIMEOUT_MS = 800;
const OUTAGE_LINE = 'database unavailable: background work paused, requests that need it answer 503 until it is back';

describe.skipIf(!databaseUrl)('pool after a silent failover', { tags: ['postgres'] }, () => {
  let proxy: TcpProxy;
  let db: Db;
  let pinger: DatabasePinger;
  let outage: DatabaseOutage;
  const { logger, lines } = capturingLogger();

  beforeAll(async () => {
    const started = await startDatabaseProxy(databaseUrl as string);
    proxy = started.proxy;
    const viaProxy = started.url;
    pinger = createDatabasePinger({ url: viaProxy, timeoutMs: 500 });
    outage = createDatabaseOutage(logger, undefined, pinger.ping);
    db = await createDatabase({ databaseUrl: viaProxy, dataDir: '', poolSize: 4, connectTimeoutMs: 500, queryTimeoutMs: QUERY_TIMEOUT_MS, health: outage });
  });

  afterAll(async () => {
    // The silenced connections never answer a goodbye: close them first.
    await proxy?.close();
    await pinger?.close();
    await db?.destroy();
  });

  it('hands out none of the connections made before the outage once the database is back', async () => {
    // Four connections, idle in the pool.
    await Promise.all(Array.from({ length: 4 }, () => sql`SELECT pg_sleep(0.05)`.execute(db)));

    proxy.silence();
    await expect(sql`SELECT 1`.execute(db)).rejects.toThrow(/database query deadline passed/);
    expect(outage.down).toBe(true);

    proxy.restore();
    await expect
      .poll(() => {
        outage.probe();
        return outage.down;
      }, { timeout: 10_000, interval: 100 })
      .toBe(false);

    // Each of these would wait out its deadline on one of the three silenced idle connections.
    const answers = await Promise.allSettled(Array.from({ length: 4 }, () => sql<{ one: number }>`SELECT 1 AS one`.execute(db)));
    expect(answers.map((a) => (a.status === 'fulfilled' ? a.value.rows[0]?.one : String(a.reason)))).toEqual([1, 1, 1, 1]);
    expect(outage.down).toBe(false);
    expect(lines.filter((l) => l.msg === OUTAGE_LINE)).toHaveLength(1);
  });
});
