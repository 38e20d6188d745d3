/**
 * The test suite's wall time as a developer meets it: `npm test` on PGlite, with no DATABASE_URL
 * or REDIS_URL, timed from the command's start to its exit. Part of `npm run bench`, which runs it
 * before the other phases so that nothing of theirs shares the machine (`--endpoints=suite` runs
 * it alone).
 */
import { spawn } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import vitestConfig from '../vitest.config.js';
import { observed, type Machine } from './bench-processes.js';

/** The goal for the suite's wall time on a 2-core machine. */
export const SUITE_GOAL_S = 120;

export interface SuiteRun {
  wallS: number;
  passed: number;
  failed: number;
  skipped: number;
  machine: Machine;
}

/** What vitest's json reporter writes that this bench reads. */
interface VitestJson {
  numPassedTests: number;
  numFailedTests: number;
  numPendingTests: number;
  numTodoTests: number;
}

/** The suite's report lines are kept and only the last of them shown, unless the run failed. */
const SHOWN_LINES = 12;

export async function testSuiteRun(): Promise<SuiteRun> {
  const report = join(tmpdir(), `test-suite-${process.pid}.json`);
  const env = { ...process.env };
  delete env.DATABASE_URL;
  delete env.REDIS_URL;
  // Reporters named on the command line replace the config's: its own, then the json one for the counts.
  const configured = [vitestConfig.test?.reporters ?? []].flat().filter((r): r is string => typeof r === 'string');
  const args = ['test', '--', ...configured.map((r) => `--reporter=${r}`), '--reporter=json', `--outputFile.json=${report}`];
  try {
    const { value, machine } = await observed(
      () =>
        new Promise<{ wallMs: number; code: number | null; out: string }>((resolve, reject) => {
          const started = performance.now();
          const child = spawn('npm', args, { env, stdio: ['ignore', 'pipe', 'inherit'] });
          let out = '';
          child.stdout.setEncoding('utf8');
          child.stdout.on('data', (chunk: string) => (out += chunk));
          child.on('error', reject);
          child.on('close', (code) => resolve({ wallMs: performance.now() - started, code, out }));
        }),
    );
    const lines = value.out.trimEnd().split('\n');
    console.log((value.code === 0 ? lines.slice(-SHOWN_LINES) : lines).join('\n'));
    const counts = JSON.parse(readFileSync(report, 'utf8')) as VitestJson;
    return {
      wallS: value.wallMs / 1000,
      passed: counts.numPassedTests,
      failed: counts.numFailedTests,
      skipped: counts.numPendingTests + counts.numTodoTests,
      machine,
    };
  } finally {
    rmSync(report, { force: true });
  }
}

export function testSuiteTable(r: SuiteRun): string {
  const verdict = r.failed === 0 && r.wallS <= SUITE_GOAL_S ? 'met' : 'not met';
  return [
    `Test suite: \`npm test\` on PGlite (no DATABASE_URL or REDIS_URL), run before every other phase (goal: ${SUITE_GOAL_S} s or less on 2 cores):`,
    '',
    '| wall time | tests passed / failed / skipped | all CPUs busy | goal |',
    '|---|---|---|---|',
    `| ${r.wallS.toFixed(1)} s | ${r.passed} / ${r.failed} / ${r.skipped} | ${r.machine.busyPct}% | ${verdict} |`,
  ].join('\n');
}
