import { describe, expect, it } from 'vitest';
import type { TestModule } from 'vitest/node';
import { skippedTestsNote } from '../helpers/skipped-tests.reporter.js';
import { testConfig } from '../helpers/test-config.js';

/** A module of the run as the reporter reads it: its path, and its skipped tests' tags. */
function module(moduleId: string, skippedTags: string[][]): TestModule {
  const tests = skippedTags.map((tags) => ({ tags }));
  return { moduleId, children: { allTests: (state?: string) => (state === 'skipped' ? tests.values() : [].values()) } } as unknown as TestModule;
}

const run = [
  module('/repo/test/integration/database-pool.test.ts', [['postgres'], ['postgres']]),
  module('/repo/test/integration/rate-limit-multi-instance.test.ts', [['postgres', 'redis']]),
  module('/repo/test/unit/rate-limit-store.test.ts', [['redis'], ['redis'], []]),
];

describe('the note on tests skipped for want of a service', () => {
  it('names each missing service, the files it skipped, and the command that runs them', () => {
    const note = skippedTestsNote(run, testConfig({ databaseUrl: undefined, redisUrl: undefined }), '/repo');
    expect(note.split('\n')).toEqual([
      '5 tests skipped for want of a service:',
      '  3 need PostgreSQL (DATABASE_URL): test/integration/database-pool.test.ts (2), test/integration/rate-limit-multi-instance.test.ts (1)',
      '  2 need Redis (REDIS_URL): test/unit/rate-limit-store.test.ts (2)',
      'Run them against real services: DATABASE_URL=postgres://postgres@127.0.0.1:5432/test REDIS_URL=redis://127.0.0.1:6379 npm test',
    ]);
  });

  it('counts a test under a service only when the run lacks it, and says nothing when none was skipped for one', () => {
    const withPostgres = skippedTestsNote(run, testConfig({ databaseUrl: 'postgres://h/db', redisUrl: undefined }), '/repo');
    expect(withPostgres).toContain('3 need Redis (REDIS_URL): test/integration/rate-limit-multi-instance.test.ts (1), test/unit/rate-limit-store.test.ts (2)');
    expect(withPostgres).not.toContain('PostgreSQL');
    expect(withPostgres).toContain('Run them against real services: REDIS_URL=redis://127.0.0.1:6379 npm test');
    expect(skippedTestsNote(run, testConfig({ databaseUrl: 'postgres://h/db', redisUrl: 'redis://h' }), '/repo')).toBe('');
  });
});
