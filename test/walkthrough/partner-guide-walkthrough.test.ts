import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  baseEnv,
  codeBlocks,
  freePorts,
  GUIDE_CASES,
  GUIDE_WALKTHROUGH,
  jsonLines,
  missingTools,
  readWalkthrough,
  rewrite,
  ROOT,
  startBash,
  startLocalService,
  tail,
  type BashProcess,
  type LocalService,
} from './walkthrough.js';

/*
 * The partner guide's walk-through (docs/partner-guide.md, section 3), run as a reader would: its
 * sh blocks, in order, in one bash process, in a folder of the reader's own (a temp dir holding
 * the guide's receiver.mjs), against the service started as `SIMULATOR_AUTO_APPROVE_MS=0 npm start`
 * starts it on a fresh clone. The key is the demo key of the service's start-up banner, which the
 * reader pastes into step 0.
 *
 * Pace: the blocks are run one at a time with 1.2 s between them, under the default rate limits a
 * reader has (5 a second, 60 a minute), so a block that grows past what a paste may send fails here.
 *
 * Strictness: `set -euo pipefail`. The guide shows refusals on purpose (the 422s of steps 5 and 7),
 * so curl is not made to fail on an HTTP error; instead it keeps every answer's headers in a file
 * outside the reader's folder (-D), and the test requires exactly the refusals the guide shows: a 429 or a 4xx from a
 * stale id fails it.
 *
 * The receiver is also run alone against deliveries signed by the `standardwebhooks` package, for
 * what the walk-through cannot show: refused signatures, stale timestamps, rotations.
 *
 * The worked example of a case (section 7) is run the same way, after step 0 of the walk-through,
 * which gives it `API` and `KEY`.
 */

const GUIDE = readFileSync(join(ROOT, 'docs', 'partner-guide.md'), 'utf8');
const START_COMMAND = 'SIMULATOR_AUTO_APPROVE_MS=0 npm start';
/** Step 0's line the reader completes with the banner's key. */
const KEY_LINE = 'KEY=gpk_sandbox_...';
const PARTNER_REFERENCE = 'TXN-20261125-000417';
const PAUSE_SECONDS = 1.2;

const { missing: MISSING_TOOLS, skipReason: SKIP_REASON } = missingTools(['bash', 'curl', 'jq']);
if (SKIP_REASON) console.warn(`partner-guide-walkthrough.test.ts${SKIP_REASON}`);

const walkthrough = readWalkthrough(GUIDE, GUIDE_WALKTHROUGH);
const casesExample = readWalkthrough(GUIDE, GUIDE_CASES);
const receiverSources = codeBlocks(GUIDE, 'js').filter((block) => block.startsWith('// receiver.mjs'));
const RECEIVER = receiverSources[0] ?? '';

describe('partner guide walk-through: the text', () => {
  it('is marked, has steps 0 to 13 as sh blocks of at most four API calls, and no placeholder but the key', () => {
    expect(walkthrough.section).toContain(START_COMMAND);
    for (let step = 0; step <= 13; step++) expect(walkthrough.section).toContain(`**${step}. `);
    expect(walkthrough.blocks.length).toBeGreaterThanOrEqual(14);
    expect(walkthrough.blocks.filter((block) => block.includes(KEY_LINE))).toHaveLength(1);
    for (const block of walkthrough.blocks) {
      expect((block.match(/\bcurl\b/g) ?? []).length, block).toBeLessThanOrEqual(4);
      expect(block).not.toMatch(/<[a-z][\w -]*>/i); // e.g. <payment id>
      expect(block).not.toContain('uuidgen');
      expect(block.replace(KEY_LINE, '')).not.toContain('...');
    }
  });

  it("marks the case example: sh blocks of at most four API calls, no placeholder, and step 0's settings not repeated", () => {
    expect(casesExample.blocks.length).toBeGreaterThanOrEqual(4);
    for (const block of casesExample.blocks) {
      expect((block.match(/\bcurl\b/g) ?? []).length, block).toBeLessThanOrEqual(4);
      expect(block).not.toMatch(/<[a-z][\w -]*>/i);
      expect(block).not.toContain('...');
      expect(block).not.toMatch(/^(API|KEY)=/m);
    }
  });

  it('shows receiver.mjs once, and no other copy of its signature check', () => {
    expect(receiverSources).toHaveLength(1);
    expect(GUIDE.match(/function validStandardSignature/g)).toHaveLength(1);
    expect(GUIDE.match(/function signingKey/g)).toHaveLength(1);
  });
});

/** A receiver.mjs of the guide listening on a free port, with what it has printed. */
interface Receiver {
  port: number;
  output(): string;
  stop(): void;
}

async function startReceiver(dir: string, secrets: string): Promise<Receiver> {
  const [port = 0] = await freePorts(1);
  writeFileSync(join(dir, 'receiver.mjs'), RECEIVER);
  let output = '';
  const proc: ChildProcess = spawn(process.execPath, ['receiver.mjs'], {
    cwd: dir,
    env: { ...baseEnv(), WEBHOOK_SECRET: secrets, HOOK_PORT: String(port) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  proc.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  proc.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const deadline = Date.now() + 10_000;
  while (!(await fetch(`http://127.0.0.1:${port}/`, { method: 'POST' }).then(() => true, () => false))) {
    if (proc.exitCode !== null || Date.now() > deadline) throw new Error(`receiver.mjs did not start:\n${output}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return { port, output: () => output, stop: () => proc.kill('SIGKILL') };
}

describe('partner guide receiver.mjs, alone', () => {
  const GENERATED = `whsec_${Buffer.alloc(32, 7).toString('base64')}`;
  const CHOSEN = 'a-chosen-secret-of-the-partner'; // not the whsec_ form: keyed with its UTF-8 bytes
  let dir = '';
  let receiver: Receiver | null = null;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'guide-receiver-'));
    receiver = await startReceiver(dir, `${GENERATED},${CHOSEN}`);
  }, 15_000);

  afterAll(() => {
    receiver?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const signer = (secret: string) => new Webhook(secret.startsWith('whsec_') ? secret : `whsec_${Buffer.from(secret, 'utf8').toString('base64')}`);

  async function deliver(body: object, headers: (id: string, timestamp: number, payload: string) => Record<string, string>): Promise<number> {
    const payload = JSON.stringify(body);
    const id = (body as { eventId: string }).eventId;
    const res = await fetch(`http://127.0.0.1:${receiver?.port}/hooks`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers(id, Math.floor(Date.now() / 1000), payload) },
      body: payload,
    });
    return res.status;
  }

  const signed =
    (secret: string, at: (now: number) => number = (now) => now) =>
    (id: string, now: number, payload: string) => ({
      'webhook-id': id,
      'webhook-timestamp': String(at(now)),
      'webhook-signature': signer(secret).sign(id, new Date(at(now) * 1000), payload),
    });

  const event = (name: string, eventId: string, data: object) => ({ event: name, eventId, deliveryId: eventId, createdAt: new Date().toISOString(), data });

  it('answers 204 to a verified event and prints it once, however often it comes', async () => {
    const confirmed = event('payment.confirmed', 'ev-1', { id: 'p-1', amount: 150000, partnerReference: PARTNER_REFERENCE });
    expect(await deliver(confirmed, signed(GENERATED))).toBe(204);
    expect(await deliver(confirmed, signed(GENERATED))).toBe(204);
    const out = receiver?.output() ?? '';
    expect(out).toContain(`webhook payment.confirmed {"id":"p-1","amount":150000,"partnerReference":"${PARTNER_REFERENCE}"}`);
    // Its own event's line: the receiver is shared, and another test's accepted event may have come first.
    expect(out.match(/webhook payment\.confirmed \{"id":"p-1"/g)).toHaveLength(1);
    expect(out).toContain('webhook payment.confirmed ev-1 again: already handled');
  });

  it('accepts either secret of WEBHOOK_SECRET, and a rotation signature list where one entry matches', async () => {
    expect(await deliver(event('payment.submitted', 'ev-2', { id: 'p-2', invoiceId: 'i-2', partnerReference: null }), signed(CHOSEN))).toBe(204);
    const both = (id: string, now: number, payload: string) => {
      const stranger = signed('whsec_' + Buffer.alloc(32, 9).toString('base64'))(id, now, payload);
      const ours = signed(GENERATED)(id, now, payload);
      return { ...ours, 'webhook-signature': `${stranger['webhook-signature']} ${ours['webhook-signature']}` };
    };
    expect(await deliver(event('payment.failed', 'ev-3', { id: 'p-3', invoiceId: 'i-3', partnerReference: null }), both)).toBe(204);
    expect(receiver?.output()).toContain('webhook payment.submitted {"id":"p-2"');
    expect(receiver?.output()).toContain('webhook payment.failed {"id":"p-3"');
  });

  it('answers 401 to a wrong secret, a stale or future timestamp, a missing signature and the body-only signature', async () => {
    const body = event('payment.confirmed', 'ev-4', { id: 'p-4', amount: 1, partnerReference: null });
    expect(await deliver(body, signed('whsec_' + Buffer.alloc(32, 1).toString('base64')))).toBe(401);
    expect(await deliver(body, signed(GENERATED, (now) => now - 301))).toBe(401);
    expect(await deliver(body, signed(GENERATED, (now) => now + 301))).toBe(401);
    expect(await deliver(body, (id, now) => ({ 'webhook-id': id, 'webhook-timestamp': String(now) }))).toBe(401);
    const tampered = (id: string, now: number, payload: string) => signed(GENERATED)(id, now, payload.replace('"amount":1', '"amount":2'));
    expect(await deliver(body, tampered)).toBe(401);
    expect(receiver?.output()).not.toContain('"id":"p-4"');
    // Still within the tolerance: accepted.
    expect(await deliver(body, signed(GENERATED, (now) => now - 290))).toBe(204);
  });

  it('answers 204 to an event it does not know, and ignores it', async () => {
    expect(await deliver(event('payment.refunded', 'ev-5', { id: 'p-5' }), signed(GENERATED))).toBe(204);
    expect(receiver?.output()).toContain('webhook payment.refunded ignored');
  });
});

describe.skipIf(MISSING_TOOLS.length > 0)(`partner guide walk-through against a started service${SKIP_REASON}`, () => {
  let service: LocalService | null = null;
  const shells: BashProcess[] = [];
  let folder = '';

  beforeAll(async () => {
    service = await startLocalService({ SIMULATOR_AUTO_APPROVE_MS: '0' }); // START_COMMAND
    folder = mkdtempSync(join(tmpdir(), 'guide-walkthrough-'));
  }, 65_000);

  /**
   * Runs `body` in one bash with every curl's answer headers appended to the file `answers`, then
   * prints `vars` on a `::vars::` line; expects it to exit 0.
   */
  async function runScript(body: string, vars: string, answers: string, timeoutMs: number) {
    if (!service) throw new Error('the service did not start');
    const script = [
      'set -euo pipefail',
      'curl() { local status=0; command curl -D "$ANSWERS.last" "$@" || status=$?; cat "$ANSWERS.last" >> "$ANSWERS"; return "$status"; }',
      'set -x',
      body,
      'set +x',
      `echo "::vars:: ${vars}"`,
    ].join('\n');
    const answersFile = join(service.dataRoot, answers);
    const shell = startBash(script, { cwd: folder, env: { ...baseEnv(), ANSWERS: answersFile }, timeoutMs });
    shells.push(shell);
    const run = await shell.result;
    const report = `exit ${run.code}\n--- stdout\n${tail(run.stdout)}\n--- stderr\n${tail(run.stderr)}\n--- service\n${tail(service.log(), 3000)}`;
    expect(run.code, report).toBe(0);
    return { run, report, answersFile };
  }

  afterAll(async () => {
    for (const shell of shells) shell.kill(); // bash and what it started (receiver.mjs)
    await service?.stop();
    if (folder) rmSync(folder, { recursive: true, force: true });
  }, 20_000);

  it('runs every sh block in order in one shell: paid, refused again, confirmed live, delivered, canceled', async () => {
    if (!service) throw new Error('the service did not start');
    const { apiPort, adminPort, simulatorPort } = service;
    const [hookPort = 0] = await freePorts(1);
    const key = /Demo partner API key: (gpk_sandbox_\S+)/.exec(service.log())?.[1];
    expect(key, tail(service.log())).toBeDefined();

    writeFileSync(join(folder, 'receiver.mjs'), rewrite(RECEIVER, [['?? 8080)', `?? ${hookPort})`]]));
    // Required: the key, the API and the receiver's URL. Should a block name the admin or simulator URL, it moves too.
    const body = rewrite(walkthrough.blocks.join(`\nsleep ${PAUSE_SECONDS}\n`), [
      [KEY_LINE, `KEY=${key}`],
      ['127.0.0.1:3000', `127.0.0.1:${apiPort}`],
      ['127.0.0.1:8080', `127.0.0.1:${hookPort}`],
      // Its own file, so its lines never land inside a line curl is printing to the same terminal.
      ['node receiver.mjs &', 'node receiver.mjs >> receiver.log &'],
    ])
      .replaceAll('127.0.0.1:3001', `127.0.0.1:${adminPort}`)
      .replaceAll('127.0.0.1:3100', `127.0.0.1:${simulatorPort}`);
    expect(body).not.toMatch(/(127\.0\.0\.1|localhost):(3000|3001|3100|8080)\b/);

    const { run, report, answersFile } = await runScript(body, '$KEY $INVOICE $PAYMENT $WEBHOOK', 'answers', 100_000);

    const [, shownKey, invoiceId = '', paymentId = '', webhookId = ''] = /::vars:: (\S+) (\S+) (\S+) (\S+)/.exec(run.stdout) ?? [];
    expect(shownKey, report).toBe(key);

    // Every answer's status, in order: only the refusals the guide shows are not a 2xx.
    const statuses = [...readFileSync(answersFile, 'utf8').matchAll(/^HTTP\/[\d.]+ (\d{3})/gm)].map((m) => Number(m[1]));
    expect(statuses.length, report).toBeGreaterThan(25);
    expect(statuses.filter((status) => status < 200 || status > 299), report).toEqual([422, 422]);

    const lines = run.stdout.split('\n').map((line) => line.trim());
    const answers = jsonLines(run.stdout);

    // Step 4: created, with the partner reference as sent. jq prints its summary of payment.json
    // over several lines, after the status and the id.
    const createdAt = lines.indexOf('201');
    expect(createdAt, report).toBeGreaterThanOrEqual(0);
    expect(lines[createdAt + 1]).toBe(paymentId);
    const summaryEnd = lines.indexOf('}', createdAt + 2);
    const created = JSON.parse(lines.slice(createdAt + 2, summaryEnd + 1).join('\n')) as Record<string, unknown>;
    expect(created).toMatchObject({ success: true, id: paymentId, status: 'submitted', invoiceId, partnerReference: PARTNER_REFERENCE });

    // Step 5: the same request replayed, the same key with another body refused by its code.
    expect(lines.map((line) => line.toLowerCase()), report).toContain('idempotent-replayed: true');
    expect(answers).toContainEqual(expect.objectContaining({ statusCode: 422, code: 'idempotency_key_reuse' }));

    // Step 7: confirmed after the approval, from a live answer, then a second payment refused.
    const confirmedAt = lines.findIndex((line) => line.startsWith('{') && line.includes(`"id":"${paymentId}"`) && line.includes('"status":"confirmed"'));
    expect(confirmedAt, report).toBeGreaterThan(0);
    expect(lines[confirmedAt - 1]?.toLowerCase(), report).toBe('x-status-source: live');
    const confirmed = JSON.parse(lines[confirmedAt] ?? '{}') as Record<string, unknown>;
    expect(confirmed).toMatchObject({ status: 'confirmed', partnerReference: PARTNER_REFERENCE, paidAt: expect.any(String) });
    const refusedLine = lines.find((line) => line.endsWith(' 422') && line.includes('invoice_not_payable'));
    expect(refusedLine, report).toBeDefined();
    const refused = JSON.parse((refusedLine ?? '').replace(/ 422$/, '')) as Record<string, unknown>;
    expect(refused).toMatchObject({ success: false, refNum: 'MOF-2025-0001', code: 'invoice_not_payable', requestId: expect.any(String) });
    expect(lines.indexOf(refusedLine ?? '')).toBeGreaterThan(confirmedAt);

    // The receiver verified the deliveries and printed each event once, by type and data.
    const printed = readFileSync(join(folder, 'receiver.log'), 'utf8');
    expect(printed).toContain(`webhook payment.submitted ${JSON.stringify({ id: paymentId, invoiceId, partnerReference: PARTNER_REFERENCE })}\n`);
    expect(printed).toContain(`webhook payment.confirmed ${JSON.stringify({ id: paymentId, amount: 150000, partnerReference: PARTNER_REFERENCE })}\n`);
    expect(printed.split('webhook payment.confirmed ')).toHaveLength(2);
    // Step 10: the test delivery is an event it does not handle; the redelivery one it has seen.
    expect(printed).toContain('webhook webhook.test ignored\n');
    expect(printed, report).toMatch(/webhook webhook\.test \S+ again: already handled\n/);

    // Step 9: both payment events delivered, answered 204.
    for (const name of ['payment.submitted', 'payment.confirmed']) {
      expect(answers, report).toContainEqual(expect.objectContaining({ event: name, paymentId, status: 'succeeded', statusCode: 204 }));
    }
    // The events API: the same two events, typed, newest first.
    const events = answers.filter((a) => typeof a.sequence === 'number' && typeof a.type === 'string');
    expect(events.map((e) => e.type)).toEqual(['payment.confirmed', 'payment.submitted']);
    expect(events[0]?.data).toEqual({ id: paymentId, amount: 150000, partnerReference: PARTNER_REFERENCE });

    // Step 11: canceled, and the invoice open again; step 13: the webhook is gone.
    expect(answers).toContainEqual({ id: paymentId, canceled: true });
    expect(answers).toContainEqual({ status: 'canceled' });
    expect(answers).toContainEqual({ status: 'open' });
    expect(answers).toContainEqual({ id: webhookId, deleted: true });
  }, 120_000);

  it("runs the case example after step 0: answered by the service, a receipt, a 409 naming the open case, a comment on it", async () => {
    if (!service) throw new Error('the service did not start');
    const { apiPort } = service;
    const key = /Demo partner API key: (gpk_sandbox_\S+)/.exec(service.log())?.[1];
    expect(key, tail(service.log())).toBeDefined();
    const [settings = ''] = walkthrough.blocks;
    const body = rewrite([settings, ...casesExample.blocks].join(`\nsleep ${PAUSE_SECONDS}\n`), [
      [KEY_LINE, `KEY=${key}`],
      ['127.0.0.1:3000', `127.0.0.1:${apiPort}`],
    ]);
    expect(body).not.toMatch(/(127\.0\.0\.1|localhost):(3000|3001|3100|8080)\b/);
    const { run, report, answersFile } = await runScript(body, '$CASE_PAYMENT $CASE $OPEN_CASE', 'case-answers', 60_000);
    const [, paymentId = '', caseId = '', openCaseId = ''] = /::vars:: (\S+) (\S+) (\S+)/.exec(run.stdout) ?? [];

    // Only the refusal the guide shows is not a 2xx.
    const statuses = [...readFileSync(answersFile, 'utf8').matchAll(/^HTTP\/[\d.]+ (\d{3})/gm)].map((m) => Number(m[1]));
    expect(statuses.length, report).toBeGreaterThanOrEqual(10);
    expect(statuses.filter((status) => status < 200 || status > 299), report).toEqual([409]);

    const answers = jsonLines(run.stdout);
    expect(answers, report).toContainEqual({ id: paymentId, approved: true });
    // Read back a moment after it opened: resolved by the service's own check.
    expect(answers, report).toContainEqual({
      status: 'resolved',
      dueAt: expect.any(String),
      resolution: { outcome: 'confirmed', note: expect.stringContaining('The ministry confirms the payment'), resolvedAt: expect.any(String), by: 'service' },
    });
    const eventTypes = answers.filter((a) => typeof a.sequence === 'number').map((a) => a.type);
    expect(eventTypes.sort(), report).toEqual(['case.opened', 'case.resolved', 'payment.confirmed', 'payment.submitted']);
    expect(answers).toContainEqual({ sequence: expect.any(Number), type: 'case.resolved', status: 'resolved' });

    // The receipt the customer keeps.
    expect(run.stdout, report).toContain('200 text/html; charset=utf-8');
    expect(readFileSync(join(folder, 'receipt.html'), 'utf8')).toContain(paymentId);

    // The second paid_twice case refused with the first one's id; the comment went to that one.
    expect(answers).toContainEqual({ id: openCaseId, type: 'paid_twice', status: 'open', dueAt: expect.any(String) });
    expect(answers).toContainEqual(expect.objectContaining({ statusCode: 409, code: 'case_already_open', caseId: openCaseId, requestId: expect.any(String) }));
    expect(answers).toContainEqual({
      id: openCaseId,
      status: 'open',
      comments: [{ author: 'partner', text: expect.stringContaining('The customer called again'), createdAt: expect.any(String) }],
    });
    // The payment's cases, newest first.
    const listed = answers.filter((a) => Object.keys(a).join() === 'id,type,status');
    expect(listed).toEqual([
      { id: openCaseId, type: 'paid_twice', status: 'open' },
      { id: caseId, type: 'paid_not_updated', status: 'resolved' },
    ]);
  }, 90_000);
});
