import { readFile } from 'node:fs/promises';
import { inject } from 'vitest';

let image: Promise<Blob | undefined> | undefined;

/** The run's migrated PGlite image (see database-image.global-setup.ts), read once per test file; none on PostgreSQL. */
export function databaseImage(): Promise<Blob | undefined> {
  image ??= (async () => {
    const path = inject('databaseImagePath');
    return path ? new Blob([await readFile(path)]) : undefined;
  })();
  return image;
}
