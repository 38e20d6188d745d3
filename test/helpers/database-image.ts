import { mkdtemp, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { inject } from 'vitest';

/**
 * The image as a Blob whose bytes come back without Node's Blob reader, which copies a 26 MB
 * image chunk by chunk and took about 80 ms of each context's start. PGlite unpacks a fresh copy.
 */
class ImageBlob extends Blob {
  readonly #bytes: Uint8Array<ArrayBuffer>;

  constructor(bytes: Uint8Array<ArrayBuffer>) {
    super([bytes], { type: 'application/x-tar' });
    this.#bytes = bytes;
  }

  override arrayBuffer(): Promise<ArrayBuffer> {
    return Promise.resolve(this.#bytes.slice().buffer);
  }
}

const images = new Map<'databaseImagePath' | 'initdbImagePath', Promise<Blob | undefined>>();

function imageAt(key: 'databaseImagePath' | 'initdbImagePath'): Promise<Blob | undefined> {
  let image = images.get(key);
  if (!image) {
    image = (async () => {
      const path = inject(key);
      return path ? new ImageBlob(await readFile(path)) : undefined;
    })();
    images.set(key, image);
  }
  return image;
}

/** The run's migrated PGlite image (see database-image.global-setup.ts), read once per worker; none on PostgreSQL. */
export function databaseImage(): Promise<Blob | undefined> {
  return imageAt('databaseImagePath');
}

/** The run's PGlite cluster as initdb made it, before any migration; none on PostgreSQL. */
export function initdbImage(): Promise<Blob | undefined> {
  return imageAt('initdbImagePath');
}

/**
 * A data directory on disk that holds the run's image, as a service finds it on its second start:
 * a context on it skips the embedded cluster's initdb (about 7 s of CPU).
 */
export async function seededDataDir(prefix: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  const db = await PGlite.create({ dataDir: dir, loadDataDir: await databaseImage() });
  await db.close();
  return dir;
}
