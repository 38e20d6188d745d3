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
    // A fresh process per file: each test context's embedded database keeps about 200 MB of the
    // process's memory after it is closed, and one worker running half the suite's files grew
    // past 12 GB until the kernel killed it.
    isolate: true,
    fileParallelism: true,
    maxWorkers: 2,
    // The suite is bound by CPU. Each file's process compiles the embedded database's WebAssembly
    // anew, and V8's optimizing tier for it costs more than it saves in a process that lives a few
    // seconds: on the baseline compiler alone the suite took 200 s and 326 s of CPU on 2 cores,
    // against 241 s and 408 s.
    execArgv: ['--liftoff-only'],
    projects: [
      // The unit tests start no embedded database, so one process serves all their files: a fresh
      // process per file cost more than the tests themselves (test/unit: 24.5 s and 44 s of CPU,
      // against 12.6 s and 21 s).
      { extends: true, test: { name: 'unit', include: ['test/unit/**/*.test.ts'], isolate: false } },
      // Only these files start test contexts, so only they need the migrated database image.
      {
        extends: true,
        test: { name: 'integration', include: ['test/**/*.test.ts'], exclude: ['test/unit/**'], globalSetup: ['test/helpers/database-image.global-setup.ts'] },
      },
    ],
  },
});
