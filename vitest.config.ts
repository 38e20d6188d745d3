import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/helpers/database-image.global-setup.ts'],
    // Bounds on a hang, not measures of speed (timing belongs in bench/): a test context's start,
    // processes spawned through tsx and Chromium take several times longer on a busy machine.
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: 'forks',
    // Each worker imports the service once for all its files, not once per file; every test
    // builds its own context from factories, so there is no module state to leak between files.
    isolate: false,
    fileParallelism: true,
    maxWorkers: 2,
  },
});
