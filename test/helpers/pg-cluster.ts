import { execFile } from 'node:child_process';
import { appendFileSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
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

/** Runs one of the server's programs (initdb, pg_ctl, pg_basebackup, ...) as the `postgres` user; its output. */
export async function runAsPostgres(program: string, args: string[]): Promise<{ stdout: string; stderr: string }> {
  const bin = postgresBinDir();
  if (!bin) throw new Error('no PostgreSQL server binaries under /usr/lib/postgresql');
  return run('runuser', ['-u', 'postgres', '--', join(bin, program), ...args]);
}

/** A directory of its own under the system's temp directory, owned by `postgres`. */
export async function postgresTempDir(prefix: string): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  await run('chown', ['postgres', dir]);
  return dir;
}

/** A value as postgresql.conf takes it: quoted, its quotes doubled. */
const confValue = (value: string) => `'${value.replaceAll("'", "''")}'`;

/** Appends settings to a data directory's postgresql.conf: the last line of a name wins. */
export function writeServerSettings(dataDir: string, settings: Record<string, string>): void {
  const lines = Object.entries(settings).map(([name, value]) => `${name} = ${confValue(value)}\n`);
  if (lines.length > 0) appendFileSync(join(dataDir, 'postgresql.conf'), lines.join(''));
}

/**
 * A PostgreSQL cluster of the test's own, on its own port and directory, so a fault test can stop,
 * restart and kill it without touching the server other suites share. Runs as the `postgres` user.
 */
export interface PgCluster {
  port: number;
  /** Where its socket and server log are. */
  dir: string;
  dataDir: string;
  url(database: string): string;
  start(): Promise<void>;
  /** A fast shutdown: open connections are terminated, as in a restart or a failover. */
  stop(): Promise<void>;
  /** Stops it for good and removes its data directory (and its directory, when it made that itself). */
  destroy(): Promise<void>;
}

export interface PgClusterOptions {
  /** A directory `postgres` owns to keep the cluster in, which destroy() leaves; else a temporary one of its own. */
  dir?: string;
  /** The data directory: `data` under `dir` unless given. */
  dataDir?: string;
  /** The data directory is already in place (a restored base backup): started as it is, without initdb. */
  existing?: boolean;
  /** initdb's arguments beyond the defaults, e.g. a WAL segment size. */
  initdbArgs?: string[];
  /** Server settings written to postgresql.conf before the first start (WAL archiving's, recovery's). */
  settings?: Record<string, string>;
  /**
   * Keep `fsync` and `synchronous_commit` as postgresql.conf has them (on, by default) instead of
   * turning them off for speed: a bench that times commits against a durable server needs them on.
   */
  durable?: boolean;
}

export async function createPgCluster(port: number, opts: PgClusterOptions = {}): Promise<PgCluster> {
  const ownDir = opts.dir === undefined;
  const dir = opts.dir ?? (await postgresTempDir('gpc-pg-'));
  const data = opts.dataDir ?? join(dir, 'data');
  if (!opts.existing) await runAsPostgres('initdb', ['-D', data, '-A', 'trust', '-U', 'postgres', '--no-sync', ...(opts.initdbArgs ?? [])]);
  writeServerSettings(data, opts.settings ?? {});
  const options = `-p ${port} -c listen_addresses=127.0.0.1 -k ${dir}${opts.durable ? '' : ' -c fsync=off -c synchronous_commit=off'}`;
  const cluster: PgCluster = {
    port,
    dir,
    dataDir: data,
    url: (database) => `postgres://postgres@127.0.0.1:${port}/${database}`,
    async start() {
      await runAsPostgres('pg_ctl', ['-D', data, '-o', options, '-l', join(dir, 'server.log'), '-w', 'start']);
    },
    async stop() {
      await runAsPostgres('pg_ctl', ['-D', data, '-m', 'fast', '-w', 'stop']);
    },
    async destroy() {
      await runAsPostgres('pg_ctl', ['-D', data, '-m', 'immediate', '-w', 'stop']).catch(() => undefined);
      rmSync(data, { recursive: true, force: true });
      if (ownDir) rmSync(dir, { recursive: true, force: true });
    },
  };
  await cluster.start();
  return cluster;
}

/** What a primary needs for a streaming standby to be made from it and follow it. */
const PRIMARY_SETTINGS = { wal_level: 'replica', max_wal_senders: '5', hot_standby: 'on' };

/** A cluster of its own that a streaming standby can be made from (createStandby): WAL for replicas, replication connections let in. */
export async function createReplicationPrimary(port: number, opts: Omit<PgClusterOptions, 'existing'> = {}): Promise<PgCluster> {
  const primary = await createPgCluster(port, { ...opts, settings: { ...PRIMARY_SETTINGS, ...opts.settings } });
  try {
    // initdb's own pg_hba.conf lets replication in from 127.0.0.1 today; this keeps the base backup from depending on that default.
    appendFileSync(join(primary.dataDir, 'pg_hba.conf'), 'host replication postgres 127.0.0.1/32 trust\n');
    await runAsPostgres('pg_ctl', ['-D', primary.dataDir, 'reload']);
  } catch (err) {
    await primary.destroy();
    throw err;
  }
  return primary;
}

/**
 * A hot standby of `primary`, started on `port`: a base backup taken now (`pg_basebackup -R`
 * writes standby.signal and primary_conninfo, so the copy starts streaming from the primary), in a
 * directory of its own that destroy() removes. It is never promoted.
 */
export async function createStandby(primary: PgCluster, port: number, opts: Pick<PgClusterOptions, 'durable' | 'settings'> = {}): Promise<PgCluster> {
  const dir = await postgresTempDir('gpc-standby-');
  const dataDir = join(dir, 'data');
  try {
    await runAsPostgres('pg_basebackup', ['-R', '-D', dataDir, '-h', '127.0.0.1', '-p', String(primary.port), '-U', 'postgres', '-X', 'stream', '-c', 'fast']);
    const standby = await createPgCluster(port, { ...opts, dir, dataDir, existing: true });
    return {
      ...standby,
      async destroy() {
        await standby.destroy();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  } catch (err) {
    await runAsPostgres('pg_ctl', ['-D', dataDir, '-m', 'immediate', '-w', 'stop']).catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
}
