import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/helpers/database-image.global-setup.ts'],
    testTimeout: 20_000,
    hookTimeout: 30_000,
    pool: 'forks',
    // Each worker imports the service once for all its files, not once per file; every test
    // builds its own context from factories, so there is no module state to leak between files.
    isolate: false,
    fileParallelism: true,
    maxWorkers: 2,
  },
});
