import { createServer } from 'node:net';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { CliConfig } from '../../src/config/process-env.js';
import { financeDayOf } from '../../src/domain/finance-day.js';
import { createTestContext, type TestContext } from '../helpers/test-context.js';
import { approve, partnerWithPayment } from '../helpers/api.js';
import { startReceiver } from '../helpers/webhook-receiver.js';
import { runCli } from '../helpers/cli.js';

/*
 * The operator CLI's commands, run in-process through main() against a listening admin app: what
 * each prints, and its exit code.
 */

const DORJ = { name: 'dorj', token: 'dorj-operator-token' };
let ctx: TestContext;
let config: CliConfig;
const today = () => financeDayOf(new Date());

/** Runs the CLI; its exit code and what it printed to stdout (parsed when JSON) and stderr. */
async function cli(...argv: string[]): Promise<{ code: number; out: unknown; err: string }> {
  const { code, stdout, stderr } = await runCli(argv, config);
  let out: unknown = stdout;
  try {
    out = JSON.parse(stdout);
  } catch {
    // usage text, or nothing
  }
  return { code, out, err: stderr };
}

/** A payment the ministry approved and the confirmation job confirmed. */
async function confirmedPayment(source: 'mof' | 'etax' | 'police' = 'mof') {
  const made = await partnerWithPayment(ctx, source);
  expect((await approve(ctx, made.invoice.refNum)).statusCode).toBe(200);
  await ctx.runJobs();
  return made;
}

/** A loopback port nothing listens on. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise((resolve) => server.close(resolve));
  return typeof address === 'object' && address ? address.port : 0;
}

describe('operator CLI (in-process)', () => {
  beforeEach(async () => {
    // One delivery attempt only: a webhook the receiver refuses is `failed` at once.
    ctx = await createTestContext({ config: { adminTokens: [DORJ], webhookRetryScheduleMs: [0] } });
    await ctx.admin.listen({ port: 0, host: '127.0.0.1' });
    const address = ctx.admin.server.address();
    const port = typeof address === 'object' && address ? address.port : 0;
    config = { adminUrl: `http://127.0.0.1:${port}`, adminToken: ctx.config.adminToken };
  });
  afterEach(async () => {
    await ctx?.close();
  });

  it('runs a reconciliation, lists and resolves its discrepancies, and the audit log shows both under the operator', async () => {
    const { invoice, payment } = await confirmedPayment('police');
    await ctx.sim('/__control/settlement/drop', { refNum: invoice.refNum });

    const run = await cli('reconcile', 'run', '--day', today());
    expect(run.code, run.err).toBe(0);
    expect(run.out).toMatchObject({ financeDay: today(), status: 'completed', discrepancies: 1, operator: 'admin' });
    const runId = (run.out as { id: string }).id;

    const runs = await cli('reconcile', 'runs', '--day', today());
    expect((runs.out as { items: { id: string }[] }).items.map((r) => r.id)).toEqual([runId]);

    const listed = await cli('reconcile', 'discrepancies', '--status', 'open', '--day', today());
    expect(listed.code, listed.err).toBe(0);
    const items = (listed.out as { items: { id: string; kind: string; paymentId: string }[] }).items;
    expect(items.map((d) => [d.kind, d.paymentId])).toEqual([['missing_at_ministry', payment.id]]);

    const id = items[0]?.id ?? '';
    const resolved = await cli('reconcile', 'resolve', id, '--note', 'late in the ministry report');
    expect(resolved.code, resolved.err).toBe(0);
    expect(resolved.out).toMatchObject({ id, status: 'resolved', resolvedBy: 'admin', note: 'late in the ministry report' });
    expect((await cli('reconcile', 'discrepancies', '--status', 'open')).out).toEqual({ items: [] });
    // Resolving twice is the API's 409: exit 1 with its answer.
    const again = await cli('reconcile', 'resolve', id, '--note', 'again');
    expect(again.code).toBe(1);
    expect(again.err).toContain('409');

    const audit = await cli('audit', '--operator', 'admin');
    expect(audit.code, audit.err).toBe(0);
    const entries = (audit.out as { items: { operator: string; action: string; targetId: string }[] }).items;
    expect(entries.map((e) => [e.operator, e.action, e.targetId])).toEqual(
      expect.arrayContaining([
        ['admin', 'reconciliation.run', runId],
        ['admin', 'discrepancy.resolve', id],
      ]),
    );
    const runsOnly = (await cli('audit', '--action', 'reconciliation.run')).out as { items: { action: string }[] };
    expect(runsOnly.items.map((e) => e.action)).toEqual(['reconciliation.run']);
  });

  it('exits 1 when the run is partial, still printing it', async () => {
    await ctx.sim('/__control/faults', { source: 'etax', mode: 'error', operation: 'settlement' });
    const run = await cli('reconcile', 'run', '--day', today());
    expect(run.code).toBe(1);
    expect(run.out).toMatchObject({ status: 'partial' });
    expect((run.out as { sources: { source: string; status: string }[] }).sources.find((s) => s.source === 'etax')?.status).toBe('failed');
    expect(run.err).toContain('partial');
  });

  it('shows a payment with its timeline, and finds it by refNum and partner', async () => {
    const { partner, invoice, payment } = await confirmedPayment('mof');
    const shown = await cli('payments', 'show', payment.id);
    expect(shown.code, shown.err).toBe(0);
    const detail = shown.out as { id: string; status: string; refNum: string; timeline: { to: string; cause: string }[] };
    expect(detail).toMatchObject({ id: payment.id, status: 'confirmed', refNum: invoice.refNum });
    expect(detail.timeline.map((t) => [t.to, t.cause])).toEqual([
      ['pending', 'partner_request'],
      ['submitted', 'partner_request'],
      ['confirmed', 'confirmation_job'],
    ]);

    const found = await cli('payments', 'search', '--ref', invoice.refNum, '--partner', partner.id, '--status', 'confirmed', '--from', today());
    expect(found.code, found.err).toBe(0);
    expect(found.out).toMatchObject({ items: [{ id: payment.id }], nextCursor: null });

    const missing = await cli('payments', 'show', '00000000-0000-4000-8000-000000000000');
    expect(missing.code).toBe(1);
    expect(missing.err).toContain('404');
  });

  it('lists a failed delivery and queues it again under the named operator', async () => {
    const receiver = await startReceiver(['fail']);
    try {
      const { partner, invoice, payment } = await partnerWithPayment(ctx, 'mof');
      const hook = await ctx.api(partner.apiKey, { method: 'POST', url: '/api/v1/webhooks', payload: { url: receiver.url, secret: 'cli-test-webhook-secret-0123456789', events: ['payment.confirmed'] } });
      expect(hook.statusCode, hook.body).toBe(201);
      await approve(ctx, invoice.refNum);
      await ctx.runJobs();

      const list = await cli('deliveries', 'list', '--partner', partner.id, '--status', 'failed');
      expect(list.code, list.err).toBe(0);
      const items = (list.out as { items: { id: string; status: string; attempts: number; lastStatusCode: number | null }[] }).items;
      expect(items.map((d) => [d.status, d.attempts, d.lastStatusCode])).toEqual([['failed', 1, 500]]);
      const id = items[0]?.id ?? '';

      config = { ...config, adminToken: DORJ.token };
      const again = await cli('deliveries', 'redeliver', id);
      expect(again.code, again.err).toBe(0);
      expect(again.out).toMatchObject({ id, status: 'pending' });
      await ctx.runJobs();
      expect(receiver.received.filter((r) => r.body.includes(payment.id))).toHaveLength(2);
      expect((await cli('deliveries', 'list', '--partner', partner.id)).out).toMatchObject({ items: [{ id, status: 'succeeded', attempts: 2 }] });
      const audit = (await cli('audit', '--target', id)).out as { items: { operator: string; action: string }[] };
      expect(audit.items.map((e) => [e.operator, e.action])).toEqual([['dorj', 'delivery.redeliver']]);

      const unknown = await cli('deliveries', 'redeliver', '00000000-0000-4000-8000-000000000000');
      expect(unknown.code).toBe(1);
      expect(unknown.err).toContain('404');
    } finally {
      await receiver.close();
    }
  });

  it("lists a case a bank raised, shows it, takes it, comments on and resolves it under the operator; a second answer is the API's 409", async () => {
    const { partner, payment } = await partnerWithPayment(ctx, 'mof');
    const raised = await ctx.api(partner.apiKey, { method: 'POST', url: '/api/v1/cases', payload: { paymentId: payment.id, type: 'wrong_amount', description: 'Charged 12 000 instead of 10 000' } });
    expect(raised.statusCode, raised.body).toBe(201);
    const id = raised.json<{ id: string }>().id;

    const listed = await cli('cases', 'list', '--status', 'open', '--type', 'wrong_amount', '--partner', partner.id);
    expect(listed.code, listed.err).toBe(0);
    const items = (listed.out as { items: { id: string; paymentId: string; partnerId: string; status: string }[] }).items;
    expect(items.map((c) => [c.id, c.paymentId, c.partnerId, c.status])).toEqual([[id, payment.id, partner.id, 'open']]);
    expect((await cli('cases', 'list', '--type', 'paid_twice', '--partner', partner.id)).out).toEqual({ items: [] });

    const shown = await cli('cases', 'show', id);
    expect(shown.code, shown.err).toBe(0);
    expect(shown.out).toMatchObject({ id, paymentId: payment.id, type: 'wrong_amount', status: 'open', description: 'Charged 12 000 instead of 10 000', partnerId: partner.id, comments: [] });

    config = { ...config, adminToken: DORJ.token };
    const taken = await cli('cases', 'take', id);
    expect(taken.code, taken.err).toBe(0);
    expect(taken.out).toMatchObject({ id, status: 'in_progress', assignee: 'dorj' });

    const commented = await cli('cases', 'comment', id, '--text', 'Asked the ministry for its ledger line');
    expect(commented.code, commented.err).toBe(0);
    expect((commented.out as { comments: unknown[] }).comments).toEqual([
      { author: 'operator', operator: 'dorj', text: 'Asked the ministry for its ledger line', createdAt: expect.any(String) },
    ]);

    const resolved = await cli('cases', 'resolve', id, '--outcome', 'reversed', '--note', 'The ministry returned the 2 000', '--ministry-reference', 'MOF-REV-9');
    expect(resolved.code, resolved.err).toBe(0);
    expect(resolved.out).toMatchObject({
      id,
      status: 'resolved',
      resolvedOperator: 'dorj',
      resolution: { outcome: 'reversed', ministryReference: 'MOF-REV-9', note: 'The ministry returned the 2 000', by: 'operator' },
    });
    expect((await cli('cases', 'list', '--partner', partner.id)).out).toEqual({ items: [] });

    const again = await cli('cases', 'resolve', id, '--outcome', 'other', '--note', 'twice');
    expect(again.code).toBe(1);
    expect(again.err).toContain('admin API answered 409');
    expect((await cli('cases', 'show', id)).out).toMatchObject({ resolution: { outcome: 'reversed' } });

    const audit = (await cli('audit', '--target', id)).out as { items: { operator: string; action: string }[] };
    expect(audit.items.map((e) => [e.operator, e.action]).sort()).toEqual([
      ['dorj', 'case.comment'],
      ['dorj', 'case.resolve'],
      ['dorj', 'case.take'],
    ]);

    const unknown = await cli('cases', 'show', '00000000-0000-4000-8000-000000000000');
    expect(unknown.code).toBe(1);
    expect(unknown.err).toContain('404');
    const badStatus = await cli('cases', 'list', '--status', 'closed');
    expect(badStatus.code).toBe(1);
    expect(badStatus.err).toContain('admin API answered 400');
  });

  it('names the URL it could not reach, and exits 1', async () => {
    config = { ...config, adminUrl: `http://127.0.0.1:${await closedPort()}` };
    const res = await cli('partner', 'list');
    expect(res.code).toBe(1);
    expect(res.err).toContain(`could not reach the admin API at ${config.adminUrl}: `);
    expect(res.err).toContain('ECONNREFUSED');
  });

  it('names the allowed values when an option is not one of them, and exits 1', async () => {
    const partner = await ctx.partner();
    const cases: [string[], string][] = [
      [['partner', 'create', '--name', 'Enum Bank', '--qr-standard', 'qrcode'], 'qrStandard must be one of: qrpay, govstd'],
      [['partner', 'create', '--name', 'Enum Bank', '--env', 'staging'], 'environment must be one of: sandbox, production'],
      [['partner', 'set-qr-standard', partner.id, 'emvco'], 'qrStandard must be one of: qrpay, govstd'],
      [['deliveries', 'list', '--status', 'sent'], 'status must be one of: pending, succeeded, failed, canceled'],
      [['payments', 'search', '--status', 'paid'], 'status must be one of: pending, submitted, confirmed, failed, canceled'],
    ];
    for (const [argv, message] of cases) {
      const res = await cli(...argv);
      expect(res.code, argv.join(' ')).toBe(1);
      expect(res.err, argv.join(' ')).toContain('admin API answered 400');
      expect(res.err, argv.join(' ')).toContain(message);
      expect(res.err, argv.join(' ')).not.toContain('must be equal to');
    }
  });

  it("sets a partner's own rate limits, resets them with --default, and the partner list shows both", async () => {
    const partner = await ctx.partner();
    const set = await cli('partner', 'set-limits', partner.id, '--per-second', '20', '--per-minute', '600', '--per-hour', '10000');
    expect(set.code, set.err).toBe(0);
    expect(set.out).toMatchObject({ id: partner.id, active: true, rateLimits: { perSecond: 20, perMinute: 600, perHour: 10000 } });
    const listed = (await cli('partner', 'list')).out as { id: string; rateLimits: unknown }[];
    expect(listed.find((p) => p.id === partner.id)?.rateLimits).toEqual({ perSecond: 20, perMinute: 600, perHour: 10000 });

    const reset = await cli('partner', 'set-limits', partner.id, '--default');
    expect(reset.code, reset.err).toBe(0);
    expect(reset.out).toMatchObject({ id: partner.id, rateLimits: null });
    const after = (await cli('partner', 'list')).out as { id: string; rateLimits: unknown }[];
    expect(after.find((p) => p.id === partner.id)?.rateLimits).toBeNull();
  });

  it('leaves limits the admin API refuses to it (exit 1, its message), and half-given ones to the usage (exit 2)', async () => {
    const partner = await ctx.partner();
    const refused: [string[], string][] = [
      [['--per-second', '0', '--per-minute', '60', '--per-hour', '1000'], 'rateLimits.perSecond must be >= 1'],
      [['--per-second', '5', '--per-minute', '1.5', '--per-hour', '1000'], 'rateLimits.perMinute must be of type integer'],
      [['--per-second', '5', '--per-minute', '60', '--per-hour', 'many'], 'rateLimits.perHour must be of type integer'],
    ];
    for (const [options, message] of refused) {
      const res = await cli('partner', 'set-limits', partner.id, ...options);
      expect(res.code, options.join(' ')).toBe(1);
      expect(res.err, options.join(' ')).toContain('admin API answered 400');
      expect(res.err, options.join(' ')).toContain(message);
    }
    const usage: [string[], string][] = [
      [[partner.id, '--per-second', '5', '--per-minute', '60'], 'missing --per-hour'],
      [[partner.id], 'missing --per-second'],
      [[partner.id, '--default', '--per-second', '5'], '--default does not go with --per-second'],
      [['--default'], 'missing partner id'],
    ];
    for (const [args, message] of usage) {
      const res = await cli('partner', 'set-limits', ...args);
      expect(res.code, args.join(' ')).toBe(2);
      expect(res.err, args.join(' ')).toContain(message);
      expect(res.err, args.join(' ')).toContain('Usage: npm run cli --');
    }
    const listed = (await cli('partner', 'list')).out as { id: string; rateLimits: unknown }[];
    expect(listed.find((p) => p.id === partner.id)?.rateLimits).toBeNull();
  });

  it('exits 2 with the usage on a usage error, and 0 with it on --help', async () => {
    for (const argv of [[], ['reconcile'], ['reconcile', 'run'], ['reconcile', 'resolve', 'some-id'], ['payments', 'show'], ['audit', '--day', today()], ['nonsense']]) {
      const res = await cli(...argv);
      expect(res.code, argv.join(' ')).toBe(2);
      expect(res.err, argv.join(' ')).toContain('Usage: npm run cli --');
    }
    const caseId = '00000000-0000-4000-8000-000000000000';
    const caseUsage: [string[], string][] = [
      [['cases'], 'missing cases command'],
      [['cases', 'show'], 'missing case id'],
      [['cases', 'take'], 'missing case id'],
      [['cases', 'comment', caseId], 'missing --text'],
      [['cases', 'resolve', caseId, '--note', 'found'], 'missing --outcome'],
      [['cases', 'resolve', caseId, '--outcome', 'confirmed'], 'missing --note'],
      [['cases', 'resolve', '--outcome', 'confirmed', '--note', 'found'], 'missing case id'],
      [['cases', 'list', '--note', 'x'], 'cases list does not take --note'],
    ];
    for (const [argv, message] of caseUsage) {
      const res = await cli(...argv);
      expect(res.code, argv.join(' ')).toBe(2);
      expect(res.err, argv.join(' ')).toContain(message);
      expect(res.err, argv.join(' ')).toContain('Usage: npm run cli --');
    }
    const help = await cli('--help');
    expect(help.code).toBe(0);
    expect(String(help.out)).toContain('reconcile run --day YYYY-MM-DD');
    expect(String(help.out)).toContain('partner set-limits <partnerId> (--per-second N --per-minute N --per-hour N | --default)');
    expect(String(help.out)).toContain('cases resolve <caseId> --outcome confirmed|reversed|refunded_by_partner|no_fault_found|other --note "..." [--ministry-reference REF]');
  });
});
