import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/**
 * Run by a child Node process: makes a PGlite cluster (its initdb) in `dataDir`, or in memory and
 * then writes its data directory as a tarball to `dumpTo`. Plain JavaScript, so the child needs no
 * TypeScript loader; the PGlite module comes by URL.
 */
const CHILD_SOURCE = `
const [pgliteUrl, dataDir, dumpTo] = process.argv.slice(1);
const { PGlite } = await import(pgliteUrl);
const { writeFile } = await import('node:fs/promises');
const db = await PGlite.create(dataDir || undefined);
if (dumpTo) await writeFile(dumpTo, Buffer.from(await (await db.dumpDataDir('none')).arrayBuffer()));
await db.close();
`;

async function initdbInChild(dataDir: string, dumpTo: string): Promise<void> {
  const pgliteUrl = import.meta.resolve('@electric-sql/pglite');
  // The child runs initdb once and exits: V8's optimizing compiler would spend more CPU compiling
  // PGlite's WebAssembly (1.7 s of its 7 s of CPU here) than its code saves in that one run.
  await run(process.execPath, ['--liftoff-only', '--input-type=module', '-e', CHILD_SOURCE, pgliteUrl, dataDir, dumpTo], { maxBuffer: 1024 * 1024 });
}

/**
 * A new PGlite cluster is made by its initdb, whose WebAssembly instance and compiled code (some
 * 450 MB) stay resident in the process that ran it: the service's memory on the embedded
 * database doubled for good. A child process makes the cluster instead, and its memory goes
 * with it.
 *
 * In memory: the new cluster's data directory, as an image to start from. On disk: the cluster
 * is made in `dataDir` (an existing one is left alone) and null returned.
 */
export async function initializeEmbeddedCluster(dataDir: string | null): Promise<Blob | null> {
  if (dataDir !== null) {
    if (!existsSync(join(dataDir, 'PG_VERSION'))) await initdbInChild(dataDir, '');
    return null;
  }
  const dir = mkdtempSync(join(tmpdir(), 'embedded-cluster-'));
  try {
    const dumpTo = join(dir, 'cluster.tar');
    await initdbInChild('', dumpTo);
    return new Blob([await readFile(dumpTo)]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** DATA_DIR names no directory: the embedded database lives in memory. */
export function isInMemory(dataDir: string): boolean {
  return dataDir === 'memory://' || dataDir === '';
}

/** The embedded cluster in `dataDir`, made by initdb unless it is there already. */
export async function initializeEmbeddedClusterOnDisk(dataDir: string): Promise<void> {
  mkdirSync(dataDir, { recursive: true });
  await initializeEmbeddedCluster(dataDir);
}
