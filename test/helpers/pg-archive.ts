import { execFile } from 'node:child_process';
import { existsSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { createPgCluster, postgresTempDir, runAsPostgres, type PgCluster } from './pg-cluster.js';
import { queryOnce } from './pg-query.js';

const run = promisify(execFile);

/** Any command as the `postgres` user, so what it writes under the cluster's directories is the server's. */
const shellAsPostgres = (command: string, args: string[]) => run('runuser', ['-u', 'postgres', '--', command, ...args]);

/** A WAL segment's file name: timeline, log and segment, 8 hex digits each. */
const SEGMENT = /^[0-9A-F]{24}$/;

export interface BaseBackup {
  /** The backup's directory: `base.tar` and its `backup_manifest`. */
  dir: string;
  bytes: number;
}

export interface ArchiveFigures {
  segments: number;
  bytes: number;
  /** Every file: segments, `.backup` labels and the `.history` files of timelines a restore began. */
  files: string[];
}

/** Where a point-in-time recovery stops: a restore point's name (pg_create_restore_point) or a time. */
export type RecoveryTarget = { name: string } | { time: Date };

export interface ArchivingCluster {
  /** The running cluster: the original one, then the one restored. */
  readonly cluster: PgCluster;
  archiveDir: string;
  /** pg_basebackup in tar format without WAL: the archive holds the WAL that makes it consistent. */
  baseBackup(): Promise<BaseBackup>;
  /** Closes the current WAL segment and waits until the archive has it: everything committed so far can be restored. Its name. */
  switchWal(): Promise<string>;
  archived(): ArchiveFigures;
  /** Stops the cluster for good and deletes its data directory; the archive and the backups stay. */
  destroyCluster(): Promise<void>;
  /**
   * A new data directory from `backup`, recovered from the archive up to `target` and promoted;
   * started on the same port, and resolved once recovery has ended (the server takes writes).
   */
  restore(backup: BaseBackup, target: RecoveryTarget): Promise<PgCluster>;
  /** Stops whichever cluster runs and deletes every directory. */
  dispose(): Promise<void>;
}

export interface ArchivingOptions {
  /** A segment is archived at the latest this long after its first write (archive_timeout). */
  archiveTimeoutS: number;
  /** initdb's WAL segment size in MB: small ones keep a drill's archive small (PostgreSQL's default is 16). */
  walSegmentMb?: number;
  /** How long restore() waits for recovery to end. */
  recoveryTimeoutMs?: number;
}

/** Files of `dir` and their total size. */
function filesOf(dir: string): { names: string[]; bytes: number } {
  const names = readdirSync(dir).sort();
  return { names, bytes: names.reduce((sum, n) => sum + statSync(join(dir, n)).size, 0) };
}

/** Waiting is over: what is waited for will not come. */
class GaveUp extends Error {}

async function waitFor<T>(what: string, attempt: () => Promise<T | null>, timeoutMs: number): Promise<T> {
  const giveUp = Date.now() + timeoutMs;
  let lastError: unknown = null;
  while (Date.now() < giveUp) {
    try {
      const value = await attempt();
      if (value !== null) return value;
    } catch (err) {
      if (err instanceof GaveUp) throw err;
      lastError = err;
    }
    await sleep(100);
  }
  throw new Error(`${what}: not within ${timeoutMs} ms${lastError ? ` (${String(lastError)})` : ''}`);
}

/** A time as recovery_target_time takes it: with a numeric offset (the server refuses a trailing `Z` there). */
const recoveryTime = (at: Date) => `${at.toISOString().replace('T', ' ').replace('Z', '')}+00`;

function recoverySettings(archiveDir: string, target: RecoveryTarget): Record<string, string> {
  return {
    restore_command: `cp ${archiveDir}/%f %p`,
    ...('name' in target ? { recovery_target_name: target.name } : { recovery_target_time: recoveryTime(target.time) }),
    recovery_target_action: 'promote',
  };
}

/**
 * A PostgreSQL cluster of the test's own with continuous WAL archiving to a directory beside it,
 * all under one temporary directory `postgres` owns: data, archive, base backups and restored data.
 */
export async function createArchivingCluster(port: number, opts: ArchivingOptions): Promise<ArchivingCluster> {
  const root = await postgresTempDir('gpc-pitr-');
  const archiveDir = join(root, 'archive');
  const backupsDir = join(root, 'backups');
  for (const dir of [archiveDir, backupsDir]) await shellAsPostgres('mkdir', ['-m', '700', dir]);
  const settings = {
    wal_level: 'replica',
    archive_mode: 'on',
    // Never overwrites: a segment already archived (by a cluster restored from the same archive) stays as it was.
    archive_command: `test ! -f ${archiveDir}/%f && cp %p ${archiveDir}/%f`,
    archive_timeout: `${opts.archiveTimeoutS}s`,
  };
  let current: PgCluster;
  try {
    current = await createPgCluster(port, { dir: root, initdbArgs: opts.walSegmentMb === undefined ? [] : [`--wal-segsize=${opts.walSegmentMb}`], settings });
  } catch (err) {
    rmSync(root, { recursive: true, force: true });
    throw err;
  }
  let backups = 0;
  let restores = 0;

  return {
    get cluster() {
      return current;
    },
    archiveDir,

    async baseBackup() {
      const dir = join(backupsDir, `base-${++backups}`);
      await runAsPostgres('pg_basebackup', ['-h', '127.0.0.1', '-p', String(port), '-U', 'postgres', '-D', dir, '-F', 't', '-X', 'none', '-c', 'fast']);
      return { dir, bytes: filesOf(dir).bytes };
    },

    async switchWal() {
      const [row] = await queryOnce<{ segment: string }>(current.url('postgres'), 'SELECT pg_walfile_name(pg_switch_wal()) AS segment');
      const segment = row?.segment ?? '';
      await waitFor(`segment ${segment} archived`, async () => (readdirSync(archiveDir).includes(segment) ? segment : null), 30_000);
      return segment;
    },

    archived() {
      const { names, bytes } = filesOf(archiveDir);
      return { segments: names.filter((n) => SEGMENT.test(n)).length, bytes, files: names };
    },

    async destroyCluster() {
      await current.destroy();
    },

    async restore(backup, target) {
      const dataDir = join(root, `restored-${++restores}`);
      await shellAsPostgres('mkdir', ['-m', '700', dataDir]);
      await shellAsPostgres('tar', ['-xf', join(backup.dir, 'base.tar'), '-C', dataDir]);
      // Before any setting is written: the files must be the ones the backup's manifest lists. No
      // WAL to parse, the backup has none of its own.
      await runAsPostgres('pg_verifybackup', ['--no-parse-wal', '--manifest-path', join(backup.dir, 'backup_manifest'), dataDir]);
      writeFileSync(join(dataDir, 'recovery.signal'), '');
      await run('chown', ['postgres', join(dataDir, 'recovery.signal')]);
      current = await createPgCluster(port, { dir: root, dataDir, existing: true, settings: recoverySettings(archiveDir, target) });
      const restored = current;
      await waitFor(
        'recovery to end',
        async () => {
          // A server that cannot reach the target (it is past the archive's end) stops: its log says why.
          if (!existsSync(join(dataDir, 'postmaster.pid'))) {
            const fatal = readFileSync(join(root, 'server.log'), 'utf8').split('\n').filter((l) => l.includes('FATAL'));
            throw new GaveUp(`the restored server stopped: ${fatal.at(-1) ?? 'see its server.log'}`);
          }
          const [row] = await queryOnce<{ recovering: boolean }>(restored.url('postgres'), 'SELECT pg_is_in_recovery() AS recovering');
          return row?.recovering === false ? true : null;
        },
        opts.recoveryTimeoutMs ?? 60_000,
      );
      return restored;
    },

    async dispose() {
      await current.destroy();
      rmSync(root, { recursive: true, force: true });
    },
  };
}
