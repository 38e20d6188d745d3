import { randomBytes, randomUUID } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import type { Static } from 'typebox';
import { createTestContext, dropSchema, type TestContext } from '../helpers/test-context.js';
import { testConfig } from '../helpers/test-config.js';
import { approve, cancelPayment, getInvoice, partnerWithInvoice, partnerWithPayment, payOk, type PaymentCreated } from '../helpers/api.js';
import { checkInvariants, kyselyRunner } from '../helpers/invariants.js';
import { financeDayOf } from '../../src/domain/finance-day.js';
import type { AdminPaymentDetailBody, DiscrepancyListBody, ReconciliationRunBody } from '../../src/schemas/back-office.schema.js';

type Run = Static<typeof ReconciliationRunBody>;
type Discrepancy = Static<typeof DiscrepancyListBody>['items'][number];
type PaymentDetail = Static<typeof AdminPaymentDetailBody>;

let ctx: TestContext;
const today = () => financeDayOf(new Date());

function admin(c: TestContext, method: 'GET' | 'POST', url: string, payload?: object) {
  return c.admin.inject({ method, url, payload, headers: { authorization: `Bearer ${c.config.adminToken}` } });
}

async function reconcile(c: TestContext = ctx, financeDay = today()): Promise<Run> {
  const res = await admin(c, 'POST', '/admin/reconciliations', { financeDay });
  expect(res.statusCode, res.body).toBe(200);
  return res.json<Run>();
}

async function discrepancies(query = `financeDay=${today()}`): Promise<Discrepancy[]> {
  const res = await admin(ctx, 'GET', `/admin/discrepancies?${query}`);
  expect(res.statusCode, res.body).toBe(200);
  return res.json<{ items: Discrepancy[] }>().items;
}

async function detail(id: string): Promise<PaymentDetail> {
  const res = await admin(ctx, 'GET', `/admin/payments/${id}`);
  expect(res.statusCode, res.body).toBe(200);
  return res.json<PaymentDetail>();
}

/** A payment the ministry approved and the confirmation job confirmed here. */
async function confirmedPayment(source: 'mof' | 'etax' | 'police' = 'mof') {
  const made = await partnerWithPayment(ctx, source);
  expect((await approve(ctx, made.invoice.refNum)).statusCode).toBe(200);
  await ctx.runJobs();
  expect((await detail(made.payment.id)).status).toBe('confirmed');
  return made;
}

async function expectBooksHold(c: TestContext = ctx): Promise<void> {
  expect(await checkInvariants(kyselyRunner(c.deps.db))).toEqual([]);
}

const counts = (run: Run) => ({ status: run.status, matched: run.matched, autoConfirmed: run.autoConfirmed, discrepancies: run.discrepancies });

describe('daily reconciliation', () => {
  beforeEach(async () => {
    ctx = await createTestContext();
  });
  afterEach(async () => {
    await ctx?.close();
  });

  it('matches confirmed payments the ministries settled, by payment id', async () => {
    await confirmedPayment('mof');
    await confirmedPayment('police');
    const run = await reconcile();
    expect(counts(run)).toEqual({ status: 'completed', matched: 2, autoConfirmed: 0, discrepancies: 0 });
    expect(run.sources.map((s) => [s.source, s.status, s.matched]).sort()).toEqual([
      ['etax', 'completed', 0],
      ['mof', 'completed', 1],
      ['police', 'completed', 1],
    ]);
    expect(await discrepancies()).toEqual([]);
  });

  it('confirms a settled payment still submitted here through the state machine, once', async () => {
    const { payment, invoice } = await partnerWithPayment(ctx, 'etax');
    await approve(ctx, invoice.refNum);
    const run = await reconcile();
    expect(counts(run)).toEqual({ status: 'completed', matched: 0, autoConfirmed: 1, discrepancies: 0 });

    const confirmed = await detail(payment.id);
    expect(confirmed.status).toBe('confirmed');
    expect(confirmed.timeline.map((t) => [t.from, t.to, t.event, t.cause])).toEqual([
      [null, 'pending', 'created', 'partner_request'],
      ['pending', 'submitted', 'ministry_accepted', 'partner_request'],
      ['submitted', 'confirmed', 'ministry_approved', 'reconciliation'],
    ]);
    expect(confirmed.timeline[2]?.detail).toMatchObject({ ministry: 'settled', financeDay: today(), settledAmount: '10000' });
    const events = await sql<{ n: string }>`SELECT count(*) AS n FROM events WHERE event = 'payment.confirmed' AND payload->>'id' = ${payment.id}`.execute(ctx.deps.db);
    expect(Number(events.rows[0]?.n)).toBe(1);
    await expectBooksHold();

    // A rerun finds it confirmed and matched: nothing is confirmed twice.
    expect(counts(await reconcile())).toEqual({ status: 'completed', matched: 1, autoConfirmed: 0, discrepancies: 0 });
  });

  it('matches each part-payment by its own amount, and auto-confirms one into the balance the ministry shows', async () => {
    const { partner, invoice } = await partnerWithInvoice(ctx, 'police', { amount: 1000, allowPartial: true });
    const part = await payOk(ctx, partner.apiKey, { invoiceId: invoice.id, amount: 400 });
    await approve(ctx, invoice.refNum);
    await ctx.runJobs();
    expect((await detail(part.id)).status).toBe('confirmed');
    const rest = await payOk(ctx, partner.apiKey, { invoiceId: invoice.id, amount: 250 });
    await approve(ctx, invoice.refNum);

    // The second part is still submitted here: the settlement confirms it, and the invoice keeps the balance.
    expect(counts(await reconcile())).toEqual({ status: 'completed', matched: 1, autoConfirmed: 1, discrepancies: 0 });
    expect(await detail(rest.id)).toMatchObject({ status: 'confirmed', amount: 250 });
    expect(await getInvoice(ctx, partner.apiKey, invoice.id)).toMatchObject({ status: 'open', amount: 350 });
    expect(await discrepancies()).toEqual([]);
    await expectBooksHold();
    expect(counts(await reconcile())).toEqual({ status: 'completed', matched: 2, autoConfirmed: 0, discrepancies: 0 });
  });

  it('records every kind of discrepancy with its fields, and a rerun finds the same ones', async () => {
    const dropped = await confirmedPayment('mof');
    const short = await confirmedPayment('police');
    const reversed = await confirmedPayment('etax');
    await ctx.sim('/__control/settlement/drop', { refNum: dropped.invoice.refNum });
    await ctx.sim('/__control/settlement/amount', { refNum: short.invoice.refNum, amount: 9000.5 });
    // Settled (a report listed it), then canceled here: the ministry keeps it in the day's settlement.
    expect(counts(await reconcile())).toMatchObject({ matched: 1, discrepancies: 2 });
    expect((await cancelPayment(ctx, reversed.partner.apiKey, reversed.payment.id)).statusCode).toBe(200);
    // A payment id the ministry settled that this service never made.
    const stranger = await strangerSettled();

    const run = await reconcile();
    expect(counts(run)).toEqual({ status: 'completed', matched: 0, autoConfirmed: 0, discrepancies: 4 });
    const found = await discrepancies();
    const byKind = Object.fromEntries(found.map((d) => [d.kind, d]));
    expect(Object.keys(byKind).sort()).toEqual(['amount_mismatch', 'missing_at_ministry', 'missing_locally', 'settled_but_canceled']);
    const common = { financeDay: today(), status: 'open', resolvedAt: null, note: null };
    expect(byKind.missing_at_ministry).toMatchObject({ ...common, source: 'mof', refNum: dropped.invoice.refNum, paymentId: dropped.payment.id, partnerId: dropped.partner.id, localAmount: 10000, ministryAmount: null });
    expect(byKind.amount_mismatch).toMatchObject({ ...common, source: 'police', refNum: short.invoice.refNum, paymentId: short.payment.id, partnerId: short.partner.id, localAmount: 10000, ministryAmount: 9000.5 });
    expect(byKind.settled_but_canceled).toMatchObject({ ...common, source: 'etax', refNum: reversed.invoice.refNum, paymentId: reversed.payment.id, partnerId: reversed.partner.id, localAmount: 10000, ministryAmount: 10000 });
    expect(byKind.missing_locally).toMatchObject({ ...common, source: 'mof', refNum: stranger.refNum, paymentId: stranger.paymentId, partnerId: null, localAmount: null, ministryAmount: 10000 });

    // Idempotent: the same rows, never a second copy.
    expect(counts(await reconcile())).toEqual(counts(run));
    expect((await discrepancies()).map((d) => d.id).sort()).toEqual(found.map((d) => d.id).sort());
    const rows = await sql<{ n: string }>`SELECT count(*) AS n FROM discrepancies`.execute(ctx.deps.db);
    expect(Number(rows.rows[0]?.n)).toBe(4);
    await expectBooksHold();
  });

  it('resolves a discrepancy the books no longer show, and keeps an operator-resolved one resolved', async () => {
    const { invoice } = await confirmedPayment('mof');
    await ctx.sim('/__control/settlement/amount', { refNum: invoice.refNum, amount: 1 });
    await reconcile();
    const [open] = await discrepancies('status=open');
    expect(open?.kind).toBe('amount_mismatch');
    const resolved = await admin(ctx, 'POST', `/admin/discrepancies/${open?.id}/resolve`, { note: 'ministry corrected by phone' });
    expect(resolved.statusCode, resolved.body).toBe(200);
    expect(resolved.json()).toMatchObject({ id: open?.id, status: 'resolved', note: 'ministry corrected by phone', resolvedBy: 'admin' });
    expect((await admin(ctx, 'POST', `/admin/discrepancies/${open?.id}/resolve`, { note: 'again' })).statusCode).toBe(409);

    await reconcile();
    expect(await discrepancies('status=open')).toEqual([]);
    expect((await discrepancies('status=resolved')).map((d) => d.note)).toEqual(['ministry corrected by phone']);

    // Both the runs and the resolution are in the audit log under the operator's name.
    const audit = (await admin(ctx, 'GET', '/admin/audit')).json<{ items: { operator: string; action: string; targetId: string; before: unknown; after: unknown }[] }>().items;
    expect(audit.filter((e) => e.action === 'reconciliation.run').map((e) => e.operator)).toEqual(['admin', 'admin']);
    const resolution = audit.find((e) => e.action === 'discrepancy.resolve');
    expect(resolution).toMatchObject({ operator: 'admin', targetId: open?.id, before: { status: 'open' }, after: { status: 'resolved', note: 'ministry corrected by phone' } });
  });

  it('leaves the run partial when a source cannot answer, and the schedule retries that source', async () => {
    await confirmedPayment('etax');
    await ctx.sim('/__control/faults', { source: 'etax', mode: 'error', operation: 'settlement' });
    const run = await reconcile();
    expect(run.status).toBe('partial');
    expect(run.sources.find((s) => s.source === 'etax')).toMatchObject({ status: 'failed', matched: 0 });
    expect(run.sources.filter((s) => s.status === 'completed').map((s) => s.source).sort()).toEqual(['mof', 'police']);

    // Only this day's runs: from RECONCILE_AT on, the schedule also takes the day before, whatever the test does.
    const day = run.financeDay;
    const dueOfDay = async () => (await ctx.deps.admin.reconciliation.runDue()).filter((r) => r.finance_day === day);
    // Not due yet: the retry waits its interval.
    expect(await dueOfDay()).toEqual([]);
    await ctx.sim('/__control/faults', { source: 'etax', mode: 'none' });
    ctx.advance(ctx.config.reconciliation.retryMs + 1000);
    const retried = await dueOfDay();
    expect(retried.map((r) => [r.finance_day, r.status, r.matched, r.operator])).toEqual([[day, 'completed', 1, null]]);
    expect(retried[0]?.sources.map((s) => s.source)).toEqual(['etax']);
    const listed = (await admin(ctx, 'GET', `/admin/reconciliations?financeDay=${day}`)).json<{ items: Run[] }>().items;
    expect(listed.map((r) => r.status)).toEqual(['completed', 'partial']);
  });

  it('reconciles the previous day on schedule, once', async () => {
    const at = ctx.now();
    // 02:00 in Mongolia is 18:00 UTC the day before; move the clock to just after the next one.
    const next = new Date(at);
    next.setUTCHours(18, 1, 0, 0);
    if (next <= at) next.setUTCDate(next.getUTCDate() + 1);
    ctx.advance(next.getTime() - at.getTime());
    const runs = await ctx.deps.admin.reconciliation.runDue();
    expect(runs.map((r) => [r.finance_day, r.status])).toEqual([[financeDayOf(new Date(ctx.now().getTime() - 86_400_000)), 'completed']]);
    expect(await ctx.deps.admin.reconciliation.runDue()).toEqual([]);
  });

  it('two runs of the same day at once give one set of results', async () => {
    const dropped = await confirmedPayment('police');
    await ctx.sim('/__control/settlement/drop', { refNum: dropped.invoice.refNum });
    // Approved at the ministry but not yet confirmed here (no confirmation pass runs after it).
    const { payment, invoice } = await partnerWithPayment(ctx, 'mof');
    await approve(ctx, invoice.refNum);
    const [a, b] = await Promise.all([reconcile(), reconcile()]);
    expect([a, b].every((r) => r.status === 'completed')).toBe(true);
    expect(a.autoConfirmed + b.autoConfirmed).toBe(1);
    expect(await discrepancies()).toHaveLength(1);
    const history = await sql<{ n: string }>`SELECT count(*) AS n FROM payment_history WHERE payment_id = ${payment.id} AND to_status = 'confirmed'`.execute(ctx.deps.db);
    expect(Number(history.rows[0]?.n)).toBe(1);
    await expectBooksHold();
  });

  it('exposes open discrepancies, the last successful run, the backlog and the confirmation lag as metrics', async () => {
    const { invoice } = await confirmedPayment('police');
    await ctx.sim('/__control/settlement/drop', { refNum: invoice.refNum });
    await partnerWithPayment(ctx, 'mof');
    await reconcile();
    const res = await ctx.admin.inject({ method: 'GET', url: '/metrics' });
    expect(res.statusCode).toBe(200);
    const line = (prefix: string) => res.body.split('\n').find((l) => l.startsWith(prefix));
    expect(line('reconciliation_open_discrepancies{kind="missing_at_ministry"}')).toMatch(/ 1$/);
    for (const source of ['mof', 'etax', 'police']) {
      const seconds = Number(line(`reconciliation_last_success_timestamp_seconds{source="${source}"}`)?.split(' ')[1]);
      expect(Math.abs(seconds - Date.now() / 1000), source).toBeLessThan(600);
    }
    expect(line('payment_confirmation_lag_seconds_count{source="police"}')).toMatch(/ 1$/);
    expect(line('payment_confirmation_backlog{source="mof"}')).toMatch(/ 1$/);
    expect(line('webhook_outbox_backlog')).toBeDefined();
  });

  it('refuses a malformed or future finance day', async () => {
    for (const financeDay of ['2025-02-30', 'yesterday', '2999-01-01']) {
      const res = await admin(ctx, 'POST', '/admin/reconciliations', { financeDay });
      expect(res.statusCode, financeDay).toBe(400);
    }
  });
});

/** Submits and approves, at the simulated ministry, a payment this service never made. */
async function strangerSettled(): Promise<{ paymentId: string; refNum: string }> {
  const refNum = `OWN-STRANGER-${randomBytes(4).toString('hex')}`;
  await ctx.sim('/__control/invoices', {
    invoices: [{ source: 'mof', refNum, description: 'x', amount: 10000, status: 'open', payee: { id: 'ORG-100', name: 'Сангийн яам' } }],
  });
  const paymentId = randomUUID();
  const res = await ctx.simulator.inject({ method: 'POST', url: '/mof/api/payments', payload: { paymentId, invoiceNo: refNum, amount: 10000 } });
  expect(res.statusCode, res.body).toBe(200);
  expect((await approve(ctx, refNum)).statusCode).toBe(200);
  return { paymentId, refNum };
}

const shared = testConfig();
describe.skipIf(!shared.databaseUrl)('two instances reconciling the same day (shared PostgreSQL)', { tags: ['postgres'] }, () => {
  const schema = `t_${randomBytes(6).toString('hex')}`;
  let a: TestContext;
  let b: TestContext;
  beforeEach(async () => {
    a = await createTestContext({ reuseSchema: schema });
    b = await createTestContext({ reuseSchema: schema, ministryUrl: a.simulatorUrl });
    ctx = a;
  });
  afterEach(async () => {
    await a?.close();
    await b?.close();
    if (shared.databaseUrl) await dropSchema(shared.databaseUrl, schema);
  });

  it('gives one set of results and confirms each payment once', async () => {
    const dropped = await confirmedPayment('mof');
    await a.sim('/__control/settlement/drop', { refNum: dropped.invoice.refNum });
    const submitted: PaymentCreated[] = [];
    for (let i = 0; i < 3; i += 1) {
      const { payment, invoice } = await partnerWithPayment(a, 'police');
      await approve(a, invoice.refNum);
      submitted.push(payment);
    }
    const [ra, rb] = await Promise.all([reconcile(a), reconcile(b)]);
    expect(ra.autoConfirmed + rb.autoConfirmed).toBe(3);
    expect(await discrepancies()).toHaveLength(1);
    const history = await sql<{ n: string }>`SELECT count(*) AS n FROM payment_history WHERE to_status = 'confirmed' AND cause = 'reconciliation'`.execute(a.deps.db);
    expect(Number(history.rows[0]?.n)).toBe(3);
    for (const payment of submitted) expect((await detail(payment.id)).status).toBe('confirmed');
    await expectBooksHold(a);
  });
});
