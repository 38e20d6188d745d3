import { setTimeout as sleep } from 'node:timers/promises';
import { sql } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import { createTestContext, type ContextOptions, type TestContext } from '../helpers/test-context.js';
import { testConfig } from '../helpers/test-config.js';
import { approve, partnerWithInvoice, partnerWithPayment, payOk, ownInvoice, type Partner } from '../helpers/api.js';
import { receiverPool } from '../helpers/webhook-receiver.js';
import { startDatabaseProxy, type TcpProxy } from '../helpers/tcp-proxy.js';
import { alertTests, hasPromtool, inputSeries, parseExposition, promtoolTest, readAlertRules, type ExpectedAlert, type Scrapes } from '../helpers/alert-rules.js';
import type { RunningJobs } from '../../src/work/job-runner.js';

/*
 * Each alerting rule of deploy/prometheus/alerts.yml, fired by promtool on the metrics of a real
 * service put into the state the rule is about: the service is scraped twice, and the two scrapes
 * become series held for longer than the rule's window and `for:` (see inputSeries). A healthy
 * service's scrapes fire none of them.
 */

const { databaseUrl } = testConfig();
const DAY = 24 * 3_600_000;
const MINUTES_20 = 20 * 60_000;

describe.skipIf(!hasPromtool())('alerting rules against a real service', { tags: ['promtool'] }, () => {
  const receivers = receiverPool();
  const cleanups: (() => Promise<unknown>)[] = [];

  afterEach(async () => {
    for (const clean of cleanups.splice(0).reverse()) await clean().catch(() => undefined);
    await receivers.closeAll();
  });

  async function context(opts: ContextOptions = {}): Promise<TestContext> {
    const ctx = await createTestContext(opts);
    cleanups.push(() => ctx.close());
    return ctx;
  }

  const scrape = async (ctx: TestContext): Promise<string> => {
    const res = await ctx.admin.inject({ method: 'GET', url: '/metrics' });
    expect(res.statusCode).toBe(200);
    return res.body;
  };

  /** A sample's value in a scrape, or undefined when it has no such series. */
  function sample(body: string, series: string): number | undefined {
    return parseExposition(body).samples.find((s) => s.series === series)?.value;
  }

  async function expectFires(scrapes: Scrapes, expected: ExpectedAlert[]): Promise<void> {
    const result = await promtoolTest(inputSeries(scrapes), alertTests(expected));
    expect(result.ok, result.output).toBe(true);
  }

  async function registerWebhook(ctx: TestContext, partner: Partner, url: string): Promise<void> {
    const res = await ctx.api(partner.apiKey, { method: 'POST', url: '/api/v1/webhooks', payload: { url, secret: 'whsec_alert_rules_0123456789', events: ['payment.submitted', 'payment.confirmed'] } });
    expect(res.statusCode, res.body).toBe(201);
  }

  async function openCase(ctx: TestContext, partner: Partner, paymentId: string, type: string): Promise<string> {
    const res = await ctx.api(partner.apiKey, { method: 'POST', url: '/api/v1/cases', payload: { paymentId, type, description: 'The customer says the payment did not go through' } });
    expect(res.statusCode, res.body).toBe(201);
    return res.json<{ id: string }>().id;
  }

  it('fires none of the rules on a healthy service', async () => {
    const ctx = await context();
    const receiver = await receivers.start();
    const { partner, invoice } = await partnerWithInvoice(ctx, 'mof');
    await registerWebhook(ctx, partner, receiver.url);
    const payment = await payOk(ctx, partner.apiKey, { invoiceId: invoice.id });
    await ctx.runJobs();
    const first = await scrape(ctx);
    await approve(ctx, invoice.refNum);
    await ctx.runJobs();
    await ownInvoice(ctx, partner, 'etax');
    await payOk(ctx, partner.apiKey, { invoiceId: (await ownInvoice(ctx, partner, 'police')).id });
    // A case within its due time: the overdue gauge has its series, at 0.
    await openCase(ctx, partner, payment.id, 'other');
    await ctx.runJobs();
    const second = await scrape(ctx);

    expect(receiver.received.length).toBeGreaterThan(0);
    expect((await ctx.api(partner.apiKey, { method: 'GET', url: `/api/v1/payments/${payment.id}` })).json()).toMatchObject({ status: 'confirmed' });
    // The numbers every rule reads are there, at healthy values, so no rule is silent for want of them.
    for (const series of ['database_up', 'webhook_delivery_oldest_due_seconds', 'webhooks_disabled{reason="failing"}', 'payment_status_unchecked_seconds{source="police"}', 'cases_overdue{type="other"}']) {
      expect(sample(second, series), series).toBeDefined();
    }
    expect(sample(second, 'ministry_circuit_open{source="mof",operation="getByRef"}')).toBe(0);
    const rules = readAlertRules();
    expect(rules.length).toBeGreaterThanOrEqual(8);
    await expectFires({ first, second }, rules.map((r) => ({ alertname: r.alert, labels: [] })));
  });

  it('fires on a ministry system that fails its calls: its error rate, its open circuit, and the API answering 503', async () => {
    const ctx = await context({ config: { circuitBreaker: { failureThreshold: 3, openMs: 600_000 } } });
    const { partner, invoice } = await partnerWithInvoice(ctx, 'mof');
    const lookup = () => ctx.api(partner.apiKey, { method: 'GET', url: `/api/v1/invoices/ref/${invoice.refNum}` });
    expect((await lookup()).statusCode).toBe(200);
    const first = await scrape(ctx);
    expect((await ctx.sim('/__control/faults', { source: 'mof', mode: 'error' })).statusCode).toBe(200);
    for (let i = 0; i < 6; i++) expect((await lookup()).statusCode).toBe(503);
    const second = await scrape(ctx);

    expect(sample(second, 'ministry_circuit_open{source="mof",operation="getByRef"}')).toBe(1);
    await expectFires({ first, second }, [
      { alertname: 'MinistryErrorRateHigh', labels: [{ source: 'mof' }] },
      { alertname: 'MinistryCircuitOpen', labels: [{ source: 'mof', operation: 'getByRef' }] },
      { alertname: 'ApiServerErrorsHigh', labels: [{}] },
    ]);
  });

  it('fires on a submitted payment whose status no instance has checked for 20 minutes', async () => {
    const ctx = await context();
    await partnerWithPayment(ctx, 'etax');
    const first = await scrape(ctx);
    // No confirmation job runs meanwhile: every worker is down or stuck.
    ctx.advance(MINUTES_20);
    const second = await scrape(ctx);

    expect(sample(second, 'payment_status_unchecked_seconds{source="etax"}')).toBeGreaterThanOrEqual(MINUTES_20 / 1000);
    await expectFires({ first, second }, [{ alertname: 'PaymentStatusChecksLagging', labels: [{ source: 'etax' }] }]);
  });

  it('fires on a webhook delivery due for 20 minutes that no instance has attempted', async () => {
    const ctx = await context();
    const receiver = await receivers.start();
    const { partner, invoice } = await partnerWithInvoice(ctx, 'police');
    await registerWebhook(ctx, partner, receiver.url);
    await payOk(ctx, partner.apiKey, { invoiceId: invoice.id });
    const first = await scrape(ctx);
    // No webhook job runs meanwhile.
    ctx.advance(MINUTES_20);
    const second = await scrape(ctx);

    expect(receiver.received).toHaveLength(0);
    expect(sample(second, 'webhook_delivery_oldest_due_seconds')).toBeGreaterThanOrEqual(MINUTES_20 / 1000);
    await expectFires({ first, second }, [{ alertname: 'WebhookDeliveriesWaiting', labels: [{}] }]);
  });

  it('fires on a webhook the service disabled because every attempt failed', async () => {
    const ctx = await context();
    const receiver = await receivers.start(Array.from({ length: 10 }, () => 'fail' as const));
    const { partner, invoice } = await partnerWithInvoice(ctx, 'mof');
    await registerWebhook(ctx, partner, receiver.url);
    await payOk(ctx, partner.apiKey, { invoiceId: invoice.id });
    await ctx.runJobs();
    const first = await scrape(ctx);
    for (let day = 1; day <= 5; day++) {
      ctx.advance(DAY);
      await ctx.runJobs();
    }
    const second = await scrape(ctx);

    expect(receiver.received.length).toBeGreaterThanOrEqual(6);
    expect(sample(second, 'webhooks_disabled{reason="failing"}')).toBe(1);
    await expectFires({ first, second }, [{ alertname: 'WebhookDisabledFailing', labels: [{}] }]);
  });

  it("fires on a partner's case past its due time unresolved, by its type", async () => {
    const ctx = await context();
    const { partner, payment } = await partnerWithPayment(ctx, 'police');
    const caseId = await openCase(ctx, partner, payment.id, 'paid_not_updated');
    await ctx.runJobs();
    const first = await scrape(ctx);
    expect(sample(first, 'cases_overdue{type="paid_not_updated"}')).toBe(0);
    // Nobody answers it within the type's turnaround (24 hours); the jobs keep running meanwhile.
    ctx.advance(DAY + 60_000);
    await ctx.runJobs();
    const second = await scrape(ctx);

    const shown = await ctx.admin.inject({ method: 'GET', url: `/admin/cases/${caseId}`, headers: { authorization: `Bearer ${ctx.config.adminToken}` } });
    expect(shown.json()).toMatchObject({ status: 'escalated', overdue: true });
    expect(sample(second, 'cases_overdue{type="paid_not_updated"}')).toBe(1);
    expect(sample(second, 'case_oldest_open_age_seconds{type="paid_not_updated"}')).toBeGreaterThanOrEqual(DAY / 1000);
    await expectFires({ first, second }, [{ alertname: 'CaseOverdue', labels: [{ type: 'paid_not_updated' }] }]);
  });

  it('fires on background loops abandoning passes while the database is held by a long transaction', async () => {
    // On the embedded database, whatever the run's database: on PostgreSQL every wait of a pass
    // (a statement, a connection from the pool) has a deadline of its own shorter than the pass's,
    // so only a starved process gives passes up there. The embedded database's one connection,
    // held by a long transaction, keeps every pass waiting past its deadline: 2 × 500 ms + 1 s for
    // the loops that claim with two statements.
    const ctx = await context({ config: { databaseUrl: undefined, dbQueryTimeoutMs: 500, confirmPollMs: 100, webhookPollMs: 50 } });
    await partnerWithPayment(ctx, 'mof');
    const jobs: RunningJobs = ctx.deps.startJobs();
    cleanups.push(() => jobs.stop());
    const first = await scrape(ctx);

    // 3.5 s in statements of 250 ms. The embedded database runs its statements on the event loop:
    // between two, the timers (the passes' deadlines) get their turn.
    await ctx.deps.db.transaction().execute(async (trx) => {
      for (let i = 0; i < 14; i++) {
        await sql`SELECT pg_sleep(0.25)`.execute(trx);
        await sleep(1);
      }
    });
    await expect.poll(() => ctx.deps.metrics.workPassAbandoned.get().then((m) => m.values.length), { timeout: 10_000 }).toBeGreaterThan(0);
    const second = await scrape(ctx);

    const abandoned = parseExposition(second).samples.filter((s) => s.name === 'work_pass_abandoned_total' && s.value > 0);
    expect(abandoned.length).toBeGreaterThan(0);
    const works = abandoned.map((s) => /work="([^"]+)"/.exec(s.series)![1]!);
    await expectFires({ first, second }, [{ alertname: 'BackgroundPassesAbandoned', labels: works.map((work) => ({ work })) }]);
  });

  it.skipIf(!databaseUrl)('fires on an instance that cannot reach its database', { tags: ['postgres'] }, async () => {
    const started = await startDatabaseProxy(databaseUrl as string);
    const proxy: TcpProxy = started.proxy;
    cleanups.push(() => proxy.close());
    const ctx = await context({ config: { databaseUrl: started.url, dbConnectTimeoutMs: 1000 } });
    cleanups.push(async () => proxy.restore());
    const { partner, payment } = await partnerWithPayment(ctx, 'mof');
    const first = await scrape(ctx);
    proxy.cut();
    const read = await ctx.api(partner.apiKey, { method: 'GET', url: `/api/v1/payments/${payment.id}` });
    expect(read.statusCode).toBe(503);
    const second = await scrape(ctx);

    expect(sample(second, 'database_up')).toBe(0);
    await expectFires({ first, second }, [{ alertname: 'DatabaseUnavailable', labels: [{}] }]);
  });
});
