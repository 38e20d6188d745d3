import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** The newest installed PostgreSQL's server binaries, or null when none is installed. */
export function postgresBinDir(): string | null {
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return null;
  const versions = readdirSync(root)
    .filter((v) => existsSync(join(root, v, 'bin', 'initdb')))
    .sort((a, b) => Number(b) - Number(a));
  return versions[0] ? join(root, versions[0], 'bin') : null;
}

/** Whether this process can run a cluster of its own: the binaries, and root to act as `postgres`. */
export function canRunOwnCluster(): boolean {
  return postgresBinDir() !== null && process.getuid?.() === 0;
}

/**
 * A PostgreSQL cluster of the test's own, on its own port and directory, so a fault test can stop,
 * restart and kill it without touching the server other suites share. Runs as the `postgres` user.
 */
export interface PgCluster {
  port: number;
  url(database: string): string;
  start(): Promise<void>;
  /** A fast shutdown: open connections are terminated, as in a restart or a failover. */
  stop(): Promise<void>;
  /** Stops it for good and removes its directory. */
  destroy(): Promise<void>;
}

export async function createPgCluster(port: number): Promise<PgCluster> {
  const bin = postgresBinDir();
  if (!bin) throw new Error('no PostgreSQL server binaries under /usr/lib/postgresql');
  const dir = mkdtempSync(join(tmpdir(), 'gpc-pg-'));
  const data = join(dir, 'data');
  await run('chown', ['postgres', dir]);
  const asPostgres = (cmd: string, args: string[]) => run('runuser', ['-u', 'postgres', '--', join(bin, cmd), ...args]);
  await asPostgres('initdb', ['-D', data, '-A', 'trust', '-U', 'postgres', '--no-sync']);
  const options = `-p ${port} -c listen_addresses=127.0.0.1 -k ${dir} -c fsync=off -c synchronous_commit=off`;
  const cluster: PgCluster = {
    port,
    url: (database) => `postgres://postgres@127.0.0.1:${port}/${database}`,
    async start() {
      await asPostgres('pg_ctl', ['-D', data, '-o', options, '-l', join(dir, 'server.log'), '-w', 'start']);
    },
    async stop() {
      await asPostgres('pg_ctl', ['-D', data, '-m', 'fast', '-w', 'stop']);
    },
    async destroy() {
      await asPostgres('pg_ctl', ['-D', data, '-m', 'immediate', '-w', 'stop']).catch(() => undefined);
      rmSync(dir, { recursive: true, force: true });
    },
  };
  await cluster.start();
  return cluster;
}
