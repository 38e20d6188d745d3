/**
 * The scale bench's read replica (`--replica`): a PostgreSQL primary cluster of the bench's own
 * (never the shared server) and, once every volume is seeded, a hot standby made from it with
 * `pg_basebackup -R`, both on free ports, as test/integration/replica-reads.test.ts builds them.
 * Both keep `fsync` and `synchronous_commit` on and autovacuum off, as the shared server the
 * bench's other runs use has them, so the two row sets differ by the replica alone.
 */
import { performance } from 'node:perf_hooks';
import pg from 'pg';
import { canRunOwnCluster, createReplicationPrimary, createStandby, type PgCluster } from '../test/helpers/pg-cluster.js';
import { freePort } from './bench-processes.js';

/** As the shared server is configured (`shared_buffers` 128 MB is initdb's default too). */
const SERVER_SETTINGS = { autovacuum: 'off', max_connections: '100' };

export async function startPrimary(): Promise<PgCluster> {
  if (!canRunOwnCluster()) throw new Error('--replica needs the PostgreSQL server binaries under /usr/lib/postgresql and root, to run clusters as the postgres user');
  return createReplicationPrimary(await freePort(), { durable: true, settings: SERVER_SETTINGS });
}

async function one<T>(url: string, text: string): Promise<T | undefined> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<T & pg.QueryResultRow>(text)).rows[0];
  } finally {
    await client.end();
  }
}

/**
 * A standby of `primary` that has replayed everything the primary had written when it was made:
 * the base backup's seconds and the replay's after it.
 */
export async function startStandby(primary: PgCluster, database: string): Promise<{ standby: PgCluster; baseBackupS: number; replayS: number }> {
  const start = performance.now();
  const standby = await createStandby(primary, await freePort(), { durable: true, settings: SERVER_SETTINGS });
  const baseBackupS = (performance.now() - start) / 1000;
  try {
    const written = (await one<{ lsn: string }>(primary.url(database), 'SELECT pg_current_wal_lsn()::text AS lsn'))?.lsn;
    const replayFrom = performance.now();
    for (let i = 0; ; i++) {
      const state = await one<{ recovering: boolean; done: boolean }>(
        standby.url(database),
        `SELECT pg_is_in_recovery() AS recovering, coalesce(pg_last_wal_replay_lsn() >= '${written}'::pg_lsn, false) AS done`,
      ).catch(() => undefined);
      if (state && !state.recovering) throw new Error('the standby is not in recovery');
      if (state?.done) return { standby, baseBackupS, replayS: (performance.now() - replayFrom) / 1000 };
      if (i >= 1200) throw new Error(`the standby had not replayed up to ${written} within 120 s`);
      await new Promise((r) => setTimeout(r, 100));
    }
  } catch (err) {
    await standby.destroy();
    throw err;
  }
}

export interface Routed {
  replica: number;
  primary: number;
}

/** `database_routed_reads_total` by target, from one scrape of the service's /metrics. */
export async function routedReads(adminUrl: string): Promise<Routed> {
  const text = await (await fetch(`${adminUrl}/metrics`)).text();
  const count = (target: string) => Number(new RegExp(`^database_routed_reads_total\\{target="${target}"\\} (\\S+)$`, 'm').exec(text)?.[1] ?? 0);
  return { replica: count('replica'), primary: count('primary') };
}

/**
 * Counts the routed reads `run` makes on each service of `adminUrls` (the volumes timed in
 * lockstep). A scrape reads its own gauges through the routed reads, so two scrapes with nothing
 * between them give what one scrape adds, which is taken off.
 */
export async function countRouted(adminUrls: string[], run: () => Promise<void>): Promise<Routed[]> {
  const scrapeAll = () => Promise.all(adminUrls.map(routedReads));
  const s1 = await scrapeAll();
  const s2 = await scrapeAll();
  await run();
  const s3 = await scrapeAll();
  return adminUrls.map((_, j) => {
    const own = (t: keyof Routed) => Math.max(0, (s3[j]?.[t] ?? 0) - (s2[j]?.[t] ?? 0) - ((s2[j]?.[t] ?? 0) - (s1[j]?.[t] ?? 0)));
    return { replica: own('replica'), primary: own('primary') };
  });
}

/** Waits until a routed read (`read`) runs on the replica only: the service has measured the standby's lag under its bound. */
export async function readsOnReplica(adminUrl: string, read: () => Promise<unknown>): Promise<void> {
  for (let i = 0; i < 300; i++) {
    const [added] = await countRouted([adminUrl], async () => void (await read()));
    if (added && added.replica > 0 && added.primary === 0) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('routed reads did not move to the replica within 30 s');
}

/**
 * Where a row's routed reads ran, with how many a timed call made: `replica`, `primary`, both
 * (with the primary's share), or `not routed`.
 */
export function servedBy(reads: Routed, calls: number): string {
  const total = reads.replica + reads.primary;
  // Background work reads a little through the routing too (a new case's evidence); under half a read a call is not the endpoint's.
  if (total < calls / 2) return 'not routed';
  const perCall = `${(total / calls).toFixed(1)}/call`;
  if (reads.primary === 0) return `replica, ${perCall}`;
  if (reads.replica === 0) return `primary, ${perCall}`;
  return `both, ${Math.round((100 * reads.primary) / total)}% on the primary, ${perCall}`;
}
