import { existsSync } from 'node:fs';
import { relative } from 'node:path';
import type { Reporter, TestModule } from 'vitest/node';
import { CHROMIUM } from './browser.js';
import { testConfig } from './test-config.js';
import { hasPromtool } from './alert-rules.js';

/*
 * After a run, says which tests skipped because a service they need was not given, and the
 * command that runs them, so a skipped count never goes unexplained. The tests name what they
 * need with a tag (vitest.config.ts lists the tags).
 */

interface Need {
  tag: string;
  what: string;
  /** Whether this run has it. */
  given: (config: ReturnType<typeof testConfig>) => boolean;
  how: string;
}

const NEEDS: Need[] = [
  { tag: 'postgres', what: 'PostgreSQL (DATABASE_URL)', given: (c) => Boolean(c.databaseUrl), how: 'DATABASE_URL=postgres://postgres@127.0.0.1:5432/test' },
  { tag: 'redis', what: 'Redis (REDIS_URL)', given: (c) => Boolean(c.redisUrl), how: 'REDIS_URL=redis://127.0.0.1:6379' },
  { tag: 'chromium', what: `Chromium (${CHROMIUM})`, given: () => existsSync(CHROMIUM), how: 'apt-get install -y chromium' },
  { tag: 'promtool', what: "Prometheus' promtool", given: hasPromtool, how: 'apt-get install -y prometheus' },
];

/**
 * The note for a run: each missing service with the files whose tests it skipped; '' when none
 * skipped for one. A test tagged with a service this run lacks skips whatever else filtered it.
 */
export function skippedTestsNote(modules: readonly TestModule[], config = testConfig(), root = process.cwd()): string {
  const byNeed = new Map<Need, Map<string, number>>();
  let total = 0;
  for (const module of modules) {
    for (const test of module.children.allTests('skipped')) {
      const need = NEEDS.find((n) => test.tags.includes(n.tag) && !n.given(config));
      if (!need) continue;
      total++;
      const files = byNeed.get(need) ?? new Map<string, number>();
      const file = relative(root, module.moduleId);
      files.set(file, (files.get(file) ?? 0) + 1);
      byNeed.set(need, files);
    }
  }
  if (total === 0) return '';
  const lines = [`${total} test${total === 1 ? '' : 's'} skipped for want of a service:`];
  for (const [need, files] of byNeed) {
    const count = [...files.values()].reduce((a, b) => a + b, 0);
    lines.push(`  ${count} need ${need.what}: ${[...files].map(([f, n]) => `${f} (${n})`).join(', ')}`);
  }
  const env = NEEDS.filter((n) => (n.tag === 'postgres' || n.tag === 'redis') && byNeed.has(n)).map((n) => n.how);
  if (env.length > 0) lines.push(`Run them against real services: ${env.join(' ')} npm test`);
  if (byNeed.has(NEEDS[2]!)) lines.push(`Browser tests need Chromium: ${NEEDS[2]!.how}`);
  if (byNeed.has(NEEDS[3]!)) lines.push(`Alerting rule tests need promtool: ${NEEDS[3]!.how}`);
  return lines.join('\n');
}

export default class SkippedTestsReporter implements Reporter {
  onTestRunEnd(modules: readonly TestModule[]): void {
    const note = skippedTestsNote(modules);
    if (note) process.stdout.write(`\n${note}\n`);
  }
}
