import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePorts, readWalkthrough, rewrite } from './walkthrough.js';

/*
 * The README's walk-through ("A payment, step by step"), run as a reader would: its bash blocks,
 * in order, in one bash process, against the real service started as `npm start` starts it on a
 * fresh clone (embedded PGlite in a new data directory, the built-in simulator, APP_ENV=local).
 *
 * Ports: the service listens on free ports, not 3000/3001/3100, so the test runs beside a
 * developer's own `npm start` and beside itself; the blocks' literal 127.0.0.1:3000 (API) and the
 * webhook receiver's port 4000 are rewritten to them, and the CLI finds the admin listener through
 * ADMIN_PORT, which is how it finds 3001 by default.
 *
 * Strictness: `set -euo pipefail`, and curl is wrapped to add --fail-with-body, so an HTTP error
 * (a 4xx from a placeholder or a 429 from pasting too fast) fails the run like a failed command.
 */

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const README = readFileSync(join(ROOT, 'README.md'), 'utf8');
/** How the walk-through tells the reader to start the service; the test starts it with the same settings. */
const START_COMMAND = 'SIMULATOR_AUTO_APPROVE_MS=0 npm start';
const ADMIN_TOKEN = 'local-admin-token';

const MISSING_TOOLS = ['bash', 'curl', 'jq'].filter((tool) => spawnSync(tool, ['--version'], { stdio: 'ignore' }).status !== 0);
const SKIP_REASON = MISSING_TOOLS.length
  ? ` (SKIPPED: ${MISSING_TOOLS.join(', ')} not installed; on Debian/Ubuntu: apt-get install -y ${MISSING_TOOLS.join(' ')})`
  : '';
if (SKIP_REASON) console.warn(`readme-walkthrough.test.ts${SKIP_REASON}`);

/**
 * Only what a shell on a fresh machine has: nothing of the test's own environment (DATABASE_URL,
 * REDIS_URL, ADMIN_TOKEN, NODE_OPTIONS, vitest's variables) reaches the service or the commands.
 */
function baseEnv(): Record<string, string> {
  const env: Record<string, string> = { PATH: process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin', LANG: process.env.LANG ?? 'C.UTF-8' };
  for (const name of ['HOME', 'TMPDIR', 'USER'] as const) {
    const value = process.env[name];
    if (value !== undefined) env[name] = value;
  }
  return env;
}

const walkthrough = readWalkthrough(README);

describe('README walk-through: the text', () => {
  it('is marked, has the steps as bash blocks and no placeholders or uuidgen', () => {
    expect(walkthrough.blocks.length).toBeGreaterThanOrEqual(8);
    expect(walkthrough.section).toContain(START_COMMAND);
    for (const block of walkthrough.blocks) {
      expect(block).not.toMatch(/<[a-z][\w -]*>/i); // e.g. <payment id>
      expect(block).not.toContain('uuidgen');
      expect(block).not.toMatch(/gpk_sandbox_\.\.\./); // a key to paste by hand
    }
  });
});

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

describe.skipIf(MISSING_TOOLS.length > 0)(`README walk-through against a started service${SKIP_REASON}`, () => {
  let apiPort = 0;
  let adminPort = 0;
  let simulatorPort = 0;
  let hookPort = 0;
  let dataRoot = '';
  let service: ChildProcess | null = null;
  let serviceLog = '';
  let shell: ChildProcess | null = null;

  const tail = (text: string, chars = 6000) => (text.length > chars ? `…${text.slice(-chars)}` : text);

  beforeAll(async () => {
    [apiPort = 0, adminPort = 0, simulatorPort = 0, hookPort = 0] = await freePorts(4);
    dataRoot = mkdtempSync(join(tmpdir(), 'walkthrough-'));
    service = spawn(process.execPath, ['--import', 'tsx', 'src/bin/api.ts'], {
      cwd: ROOT,
      env: {
        ...baseEnv(),
        APP_ENV: 'local',
        PORT: String(apiPort),
        ADMIN_PORT: String(adminPort),
        SIMULATOR_PORT: String(simulatorPort),
        DATA_DIR: join(dataRoot, 'data'), // as ./.data on a fresh clone: not there yet
        SIMULATOR_AUTO_APPROVE_MS: '0', // START_COMMAND
        LOG_LEVEL: 'warn',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const keep = (chunk: Buffer) => (serviceLog = (serviceLog + chunk.toString()).slice(-100_000));
    service.stdout?.on('data', keep);
    service.stderr?.on('data', keep);

    // The API listens first, then the admin listener; both answer once the database is up.
    const deadline = Date.now() + 60_000; // a cold tsx start on a loaded CI machine
    for (;;) {
      if (service.exitCode !== null) throw new Error(`the service exited with ${service.exitCode}:\n${tail(serviceLog)}`);
      const up = await Promise.all([
        fetch(`http://127.0.0.1:${apiPort}/api/v1/health/ready`).then((r) => r.ok, () => false),
        fetch(`http://127.0.0.1:${adminPort}/metrics`).then((r) => r.ok, () => false),
      ]);
      if (up.every(Boolean)) break;
      if (Date.now() > deadline) throw new Error(`the service did not get ready in 60 s:\n${tail(serviceLog)}`);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }, 65_000);

  afterAll(async () => {
    if (shell?.pid !== undefined && shell.exitCode === null) {
      try {
        process.kill(-shell.pid, 'SIGKILL'); // bash and what it started (the webhook receiver)
      } catch {
        // already gone
      }
    }
    const proc = service;
    if (proc && proc.exitCode === null) {
      const exited = new Promise((resolve) => proc.once('exit', resolve));
      proc.kill('SIGTERM');
      const force = setTimeout(() => proc.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(force);
    }
    if (dataRoot) rmSync(dataRoot, { recursive: true, force: true });
  }, 20_000);

  function runBash(script: string, timeoutMs: number): Promise<Run> {
    return new Promise((resolve) => {
      let stdout = '';
      let stderr = '';
      const child = spawn('bash', ['-c', script], {
        cwd: ROOT,
        env: { ...baseEnv(), ADMIN_PORT: String(adminPort) },
        stdio: ['ignore', 'pipe', 'pipe'],
        detached: true, // its own process group, so a timeout kills the receiver it started too
      });
      shell = child;
      child.stdout?.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
      child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
      const timer = setTimeout(() => {
        stderr += `\n[test] the walk-through did not finish in ${timeoutMs} ms; killed`;
        if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
      }, timeoutMs);
      child.on('close', (code) => {
        clearTimeout(timer);
        resolve({ code, stdout, stderr });
      });
    });
  }

  it('runs every bash block in order in one shell, and the payment goes submitted, confirmed, canceled', async () => {
    // Required: the API and the receiver. Should a block name the admin or simulator URL, it moves too.
    const body = rewrite(walkthrough.blocks.join('\n'), [
      ['127.0.0.1:3000', `127.0.0.1:${apiPort}`],
      ['127.0.0.1:4000', `127.0.0.1:${hookPort}`],
      ['listen(4000,', `listen(${hookPort},`],
    ])
      .replaceAll('127.0.0.1:3001', `127.0.0.1:${adminPort}`)
      .replaceAll('127.0.0.1:3100', `127.0.0.1:${simulatorPort}`);
    expect(body).not.toMatch(/(127\.0\.0\.1|localhost):(3000|3001|3100|4000)\b/);

    const script = [
      'set -euo pipefail',
      'curl() { command curl --fail-with-body "$@"; }',
      'set -x',
      body,
      'set +x',
      'echo "::vars:: $KEY $INVOICE $PAYMENT"',
    ].join('\n');
    const run = await runBash(script, 100_000);
    const report = `exit ${run.code}\n--- stdout\n${tail(run.stdout)}\n--- stderr\n${tail(run.stderr)}\n--- service\n${tail(serviceLog, 3000)}`;
    expect(run.code, report).toBe(0);

    const vars = /::vars:: (\S+) (\S+) (\S+)/.exec(run.stdout);
    expect(vars, report).not.toBeNull();
    const [, key = '', invoiceId = '', paymentId = ''] = vars ?? [];
    expect(key).toMatch(/^gpk_sandbox_/);

    // The one-line JSON answers the blocks print (jq -c), in order.
    const answers = run.stdout
      .split('\n')
      .filter((line) => line.startsWith('{') && line.endsWith('}'))
      .flatMap((line) => {
        try {
          return [JSON.parse(line) as Record<string, unknown>];
        } catch {
          return [];
        }
      });
    const firstIndex = (match: (a: Record<string, unknown>) => boolean) => answers.findIndex(match);

    const replayed = firstIndex((a) => a.id === paymentId && a.message === 'idempotent');
    const approved = firstIndex((a) => a.id === paymentId && a.approved === true);
    const confirmed = firstIndex((a) => a.status === 'confirmed' && typeof a.paidAt === 'string');
    const invoicePaid = firstIndex((a) => a.id === invoiceId && a.status === 'paid');
    const settled = firstIndex(
      (a) => a.success === true && Array.isArray(a.entries) && a.entries.some((e: { refNum?: string; amount?: number }) => e.refNum === 'MOF-2025-0001' && e.amount === 150000),
    );
    const canceled = firstIndex((a) => a.id === paymentId && a.canceled === true);
    const reconciled = firstIndex((a) => a.status === 'completed' && 'discrepancies' in a);
    for (const [what, at] of Object.entries({ replayed, approved, confirmed, invoicePaid, settled, canceled, reconciled })) {
      expect(at, `${what} not in the output\n${report}`).toBeGreaterThanOrEqual(0);
    }
    // The report and the summary come while the payment is confirmed, before the cancel.
    expect(approved).toBeLessThan(confirmed);
    expect(confirmed).toBeLessThan(settled);
    expect(settled).toBeLessThan(canceled);
    expect(canceled).toBeLessThan(reconciled);

    // The optional webhook step: the receiver got the signed test delivery.
    expect(run.stdout).toMatch(/webhook received: \{"event":"webhook\.test"/);
    expect(firstIndex((a) => a.event === 'webhook.test' && a.status === 'succeeded')).toBeGreaterThanOrEqual(0);
    // The payment's events, newest first, from the events API.
    expect(answers).toContainEqual({ events: ['payment.confirmed', 'payment.submitted'] });

    // And the service's own record of the payment, through the admin API.
    const res = await fetch(`http://127.0.0.1:${adminPort}/admin/payments/${paymentId}`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
    expect(res.status).toBe(200);
    const payment = (await res.json()) as { status: string; invoiceId: string; amount: number; timeline: { to: string }[] };
    expect(payment).toMatchObject({ status: 'canceled', invoiceId, amount: 150000 });
    expect(payment.timeline.map((t) => t.to)).toEqual(['pending', 'submitted', 'confirmed', 'canceled']);
  }, 180_000);
});
