import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { baseEnv, freePorts, jsonLines, missingTools, readWalkthrough, rewrite, ROOT, startBash, startLocalService, tail, type BashProcess, type LocalService } from './walkthrough.js';

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

const README = readFileSync(join(ROOT, 'README.md'), 'utf8');
/** How the walk-through tells the reader to start the service; the test starts it with the same settings. */
const START_COMMAND = 'SIMULATOR_AUTO_APPROVE_MS=0 npm start';
const ADMIN_TOKEN = 'local-admin-token';

const { missing: MISSING_TOOLS, skipReason: SKIP_REASON } = missingTools(['bash', 'curl', 'jq']);
if (SKIP_REASON) console.warn(`readme-walkthrough.test.ts${SKIP_REASON}`);

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

describe.skipIf(MISSING_TOOLS.length > 0)(`README walk-through against a started service${SKIP_REASON}`, () => {
  let service: LocalService | null = null;
  let shell: BashProcess | null = null;

  beforeAll(async () => {
    service = await startLocalService({ SIMULATOR_AUTO_APPROVE_MS: '0' }); // START_COMMAND
  }, 65_000);

  afterAll(async () => {
    shell?.kill(); // bash and what it started (the webhook receiver)
    await service?.stop();
  }, 20_000);

  it('runs every bash block in order in one shell, and the payment goes submitted, confirmed, canceled', async () => {
    if (!service) throw new Error('the service did not start');
    const { apiPort, adminPort, simulatorPort } = service;
    const [hookPort = 0] = await freePorts(1);
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
    shell = startBash(script, { cwd: ROOT, env: { ...baseEnv(), ADMIN_PORT: String(adminPort) }, timeoutMs: 100_000 });
    const run = await shell.result;
    const report = `exit ${run.code}\n--- stdout\n${tail(run.stdout)}\n--- stderr\n${tail(run.stderr)}\n--- service\n${tail(service.log(), 3000)}`;
    expect(run.code, report).toBe(0);

    const vars = /::vars:: (\S+) (\S+) (\S+)/.exec(run.stdout);
    expect(vars, report).not.toBeNull();
    const [, key = '', invoiceId = '', paymentId = ''] = vars ?? [];
    expect(key).toMatch(/^gpk_sandbox_/);

    // The one-line JSON answers the blocks print (jq -c), in order.
    const answers = jsonLines(run.stdout);
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
