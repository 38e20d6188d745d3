import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    // The second reporter says which tests skipped for want of PostgreSQL, Redis, Chromium or promtool.
    reporters: ['default', './test/helpers/skipped-tests.reporter.ts'],
    // What a test needs beyond the defaults (it skips without it).
    tags: [
      { name: 'postgres', description: 'needs PostgreSQL: DATABASE_URL' },
      { name: 'redis', description: 'needs Redis: REDIS_URL' },
      { name: 'chromium', description: 'needs Chromium at /usr/bin/chromium' },
      { name: 'promtool', description: "needs Prometheus' promtool on the PATH (Debian's prometheus package)" },
    ],
    // Bounds on a hang, not measures of speed (timing belongs in bench/): a test context's start,
    // processes spawned through tsx and Chromium take several times longer on a busy machine.
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: 'forks',
    // Each worker process runs many files one after another, so the modules the service is made of
    // are loaded, and PGlite's WebAssembly compiled, once per worker rather than once per file:
    // that loading took about 3 s of every file's start, more than most files' tests. What the
    // files share in a worker: the database image and the schema compiler, never written to, and
    // a few embedded databases, each emptied back to the image before the next test context gets
    // it (test/helpers/embedded-database-pool.ts).
    isolate: false,
    fileParallelism: true,
    maxWorkers: 2,
    // PGlite's WebAssembly runs on V8's baseline compiler only. Its optimizing tier cost more CPU
    // than it saved when each file had a process of its own (the suite took 241 s and 408 s of CPU
    // with it, 200 s and 326 s without). Now that workers run many files, the two are within the
    // runs' spread (paired, 2 runs each: 224 s wall and 345 s of CPU with it, 232 s and 361 s
    // without).
    execArgv: ['--liftoff-only'],
    projects: [
      { extends: true, test: { name: 'unit', include: ['test/unit/**/*.test.ts'] } },
      // Only these files start test contexts, so only they need the migrated database image.
      {
        extends: true,
        test: { name: 'integration', include: ['test/**/*.test.ts'], exclude: ['test/unit/**'], globalSetup: ['test/helpers/database-image.global-setup.ts'] },
      },
    ],
  },
});
