import { randomUUID } from 'node:crypto';
import type { Static } from 'typebox';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestContext, type TestContext } from '../helpers/test-context.js';
import { startReceiver, type WebhookReceiver } from '../helpers/webhook-receiver.js';
import { getInvoice, getPayment, pay, searchInvoices, summary, type Invoice, type Settlement, type Partner, type Payment, type PaymentCreated, type PaymentFailed } from '../helpers/api.js';
import type { AdminPaymentDetailBody } from '../../src/schemas/back-office.schema.js';
import type { ScenarioListBody } from '../../src/schemas/sandbox.schema.js';
import { SANDBOX_SCENARIOS } from '../../src/domain/sandbox-scenarios.js';
import { financeDayOf } from '../../src/domain/finance-day.js';
import { checkInvariants, kyselyRunner } from '../helpers/invariants.js';

type PaymentDetail = Static<typeof AdminPaymentDetailBody>;

/*
 * Every sandbox scenario walked as a partner's engineer would: plant the invoice with the sandbox
 * key, pay it through the API, and see the outcome, the payment's status history and the webhooks.
 */

let ctx: TestContext;
let receiver: WebhookReceiver;
beforeAll(async () => {
  ctx = await createTestContext();
  receiver = await startReceiver();
});
afterAll(async () => {
  await receiver.close();
  await ctx.close();
});

const createInvoice = (apiKey: string, payload: object) => ctx.api(apiKey, { method: 'POST', url: '/api/v1/sandbox/invoices', payload });

async function planted(apiKey: string, payload: object): Promise<Invoice> {
  const res = await createInvoice(apiKey, payload);
  expect(res.statusCode, res.body).toBe(201);
  return res.json<Invoice>();
}

/** A fresh partner whose webhook (both events) goes to a path of the shared receiver of its own. */
async function partnerWithWebhook(): Promise<Partner & { path: string }> {
  const partner = await ctx.partner();
  const path = `/${randomUUID()}`;
  const res = await ctx.api(partner.apiKey, {
    method: 'POST',
    url: '/api/v1/webhooks',
    payload: { url: `${receiver.url}${path}`, secret: 'whsec_0123456789abcdef', events: ['payment.submitted', 'payment.confirmed'] },
  });
  expect(res.statusCode, res.body).toBe(201);
  return { ...partner, path };
}

/** The webhooks the partner received (after a delivery pass), as [event, payment id]. */
async function webhooks(partner: { path: string }): Promise<[string, unknown][]> {
  await ctx.runJobs();
  return receiver.received
    .filter((r) => r.url.endsWith(partner.path))
    .map((r) => JSON.parse(r.body) as { event: string; data: { id?: unknown } })
    .map((body) => [body.event, body.data.id]);
}

async function timeline(id: string): Promise<unknown[][]> {
  const res = await ctx.admin.inject({ method: 'GET', url: `/admin/payments/${id}`, headers: { authorization: `Bearer ${ctx.config.adminToken}` } });
  expect(res.statusCode, res.body).toBe(200);
  return res.json<PaymentDetail>().timeline.map((t) => [t.from, t.to, t.event]);
}

const status = async (apiKey: string, id: string) => (await getPayment(ctx, apiKey, id)).json<Payment>().status;
const sandboxApprove = (apiKey: string, paymentId: string) => ctx.api(apiKey, { method: 'POST', url: '/api/v1/sandbox/approve', payload: { paymentId } });

async function payCreated(apiKey: string, payload: object, headers: Record<string, string> = {}): Promise<PaymentCreated> {
  const res = await pay(ctx, apiKey, payload, headers);
  expect(res.statusCode, res.body).toBe(201);
  return res.json<PaymentCreated>();
}

const SUBMITTED = [null, 'pending', 'created'];
const ACCEPTED = ['pending', 'submitted', 'ministry_accepted'];

describe('GET /sandbox/scenarios', () => {
  it('lists every scenario with a description', async () => {
    const { apiKey } = await ctx.partner();
    const res = await ctx.api(apiKey, { method: 'GET', url: '/api/v1/sandbox/scenarios' });
    expect(res.statusCode).toBe(200);
    const { scenarios } = res.json<ScenarioListBody>();
    expect(scenarios.map((s) => s.name)).toEqual([...SANDBOX_SCENARIOS]);
    for (const scenario of scenarios) expect(scenario.description.length).toBeGreaterThan(10);
  });
});

describe('POST /sandbox/invoices', () => {
  it('plants an open invoice in the service invoice shape, due in 30 days, with a payer register of its own', async () => {
    const { apiKey } = await ctx.partner();
    const invoice = await planted(apiKey, { scenario: 'approve', amount: 12345.67 });
    expect(Object.keys(invoice).sort()).toEqual(['amount', 'description', 'dueDate', 'id', 'issuedAt', 'payee', 'payer', 'status', 'vehicleNo']);
    expect(invoice).toMatchObject({ amount: 12345.67, status: 'open', vehicleNo: null, payee: { id: expect.any(String), name: expect.any(String) } });
    const dueInDays = (Date.parse(invoice.dueDate ?? '') - ctx.now().getTime()) / 86_400_000;
    expect(dueInDays).toBeGreaterThan(29.9);
    expect(dueInDays).toBeLessThanOrEqual(30);
    const other = await planted(apiKey, { scenario: 'approve' });
    expect(other.amount).toBe(10000);
    expect(other.payer?.register).not.toBe(invoice.payer?.register);
    expect(await getInvoice(ctx, apiKey, invoice.id)).toEqual(invoice);
  });

  it('shows the invoice to the partner that planted it alone', async () => {
    const owner = await ctx.partner();
    const stranger = await ctx.partner();
    const invoice = await planted(owner.apiKey, { scenario: 'reject' });
    const ttd = `ttd=${encodeURIComponent(invoice.payer?.register ?? '')}`;
    expect((await searchInvoices(ctx, owner.apiKey, ttd)).invoices.map((i) => i.id)).toEqual([invoice.id]);
    expect((await ctx.api(owner.apiKey, { method: 'GET', url: `/api/v1/invoices/${invoice.id}/refresh` })).statusCode).toBe(200);

    expect(await searchInvoices(ctx, stranger.apiKey, ttd)).toEqual({ invoices: [], total: 0 });
    for (const url of [`/api/v1/invoices/${invoice.id}`, `/api/v1/invoices/${invoice.id}/refresh`]) {
      const res = await ctx.api(stranger.apiKey, { method: 'GET', url });
      expect(res.statusCode, url).toBe(404);
    }
    // The refNum a refusal names does not open it to another partner either.
    const refused = (await pay(ctx, owner.apiKey, { invoiceId: invoice.id })).json<PaymentFailed>();
    expect((await ctx.api(stranger.apiKey, { method: 'GET', url: `/api/v1/invoices/ref/${refused.refNum}` })).statusCode).toBe(404);
    expect((await pay(ctx, stranger.apiKey, { invoiceId: invoice.id })).statusCode).toBe(404);
    // Still the owner's after the stranger's attempts.
    expect((await searchInvoices(ctx, owner.apiKey, ttd)).invoices).toHaveLength(1);
  });

  it.each([
    [{ scenario: 'no-such-scenario' }],
    [{}],
    [{ scenario: 'approve', colour: 'red' }],
    [{ scenario: 'approve', amount: 0 }],
    [{ scenario: 'approve', amount: -5 }],
    [{ scenario: 'approve', amount: 10.005 }],
    [{ scenario: 'approve', amount: '100' }],
    [{ scenario: 'approve-later', delaySeconds: 0 }],
    [{ scenario: 'approve-later', delaySeconds: 3601 }],
    [{ scenario: 'approve-later', delaySeconds: 1.5 }],
    [{ scenario: 'ministry-unavailable', durationSeconds: 0 }],
  ])('answers 400 to %j', async (payload) => {
    const { apiKey } = await ctx.partner();
    const res = await createInvoice(apiKey, payload);
    expect(res.statusCode, res.body).toBe(400);
  });

  it('needs a sandbox key: none, or a production one, is refused', async () => {
    const res = await ctx.app.inject({ method: 'POST', url: '/api/v1/sandbox/invoices', payload: { scenario: 'approve' } });
    expect(res.statusCode).toBe(401);
    const live = await ctx.partner({ environment: 'production' });
    expect((await createInvoice(live.apiKey, { scenario: 'approve' })).statusCode).toBe(401);
  });

  it('is an ordinary invoice to the reports and the settlement report', async () => {
    const { apiKey } = await ctx.partner();
    const invoice = await planted(apiKey, { scenario: 'approve', amount: 777 });
    const payment = await payCreated(apiKey, { invoiceId: invoice.id });
    expect((await sandboxApprove(apiKey, payment.id)).statusCode).toBe(200);
    expect(await status(apiKey, payment.id)).toBe('confirmed');
    expect(await summary(ctx, apiKey)).toMatchObject({ total: 1, paid: 1, open: 0 });
    const financeDay = financeDayOf(ctx.now());
    const report = await ctx.api(apiKey, { method: 'POST', url: '/api/v1/payments/report', payload: { financeDay } });
    expect(report.statusCode, report.body).toBe(200);
    expect(report.json<Settlement>().entries).toMatchObject([{ amount: 777, payerReg: invoice.payer?.register }]);
  });
});

describe('the scenarios, walked through the API', () => {
  it('approve: accepted, confirmed by POST /sandbox/approve', async () => {
    const partner = await partnerWithWebhook();
    const invoice = await planted(partner.apiKey, { scenario: 'approve' });
    const payment = await payCreated(partner.apiKey, { invoiceId: invoice.id });
    expect(payment).toMatchObject({ status: 'submitted', amount: 10000, invoiceIds: [invoice.id] });
    expect((await sandboxApprove(partner.apiKey, payment.id)).statusCode).toBe(200);
    expect(await status(partner.apiKey, payment.id)).toBe('confirmed');
    expect((await getInvoice(ctx, partner.apiKey, invoice.id)).status).toBe('paid');
    expect(await timeline(payment.id)).toEqual([SUBMITTED, ACCEPTED, ['submitted', 'confirmed', 'ministry_approved']]);
    expect(await webhooks(partner)).toEqual([['payment.submitted', payment.id], ['payment.confirmed', payment.id]]);
  });

  it('approve-later: the ministry approves it delaySeconds after the payment, with no call from the partner', async () => {
    const partner = await partnerWithWebhook();
    const invoice = await planted(partner.apiKey, { scenario: 'approve-later', delaySeconds: 1 });
    const payment = await payCreated(partner.apiKey, { invoiceId: invoice.id });
    expect(payment.status).toBe('submitted');
    await expect.poll(() => status(partner.apiKey, payment.id), { timeout: 10_000, interval: 200 }).toBe('confirmed');
    expect(await timeline(payment.id)).toEqual([SUBMITTED, ACCEPTED, ['submitted', 'confirmed', 'ministry_approved']]);
    expect(await webhooks(partner)).toEqual([['payment.submitted', payment.id], ['payment.confirmed', payment.id]]);
  });

  it('reject: POST /payments answers 422 with the refusal', async () => {
    const partner = await partnerWithWebhook();
    const invoice = await planted(partner.apiKey, { scenario: 'reject' });
    const res = await pay(ctx, partner.apiKey, { invoiceId: invoice.id });
    expect(res.statusCode).toBe(422);
    const body = res.json<PaymentFailed>();
    expect(body).toEqual({ success: false, refNum: expect.any(String), message: expect.any(String), code: 'ministry_rejected', requestId: expect.any(String) });
    const [row] = await ctx.deps.db.selectFrom('payments').select(['id', 'status']).where('invoice_id', '=', invoice.id).execute();
    expect(row?.status).toBe('failed');
    expect(await timeline(row?.id ?? '')).toEqual([SUBMITTED, ['pending', 'failed', 'ministry_refused']]);
    expect((await getInvoice(ctx, partner.apiKey, invoice.id)).status).toBe('open');
    expect(await webhooks(partner)).toEqual([]);
  });

  it('fail-after-submit: accepted, then failed by the ministry; never confirmed', async () => {
    const partner = await partnerWithWebhook();
    const invoice = await planted(partner.apiKey, { scenario: 'fail-after-submit' });
    const payment = await payCreated(partner.apiKey, { invoiceId: invoice.id });
    expect(payment.status).toBe('submitted');
    await expect.poll(() => status(partner.apiKey, payment.id), { timeout: 10_000, interval: 200 }).toBe('failed');
    expect(await timeline(payment.id)).toEqual([SUBMITTED, ACCEPTED, ['submitted', 'failed', 'ministry_rejected']]);
    expect((await getInvoice(ctx, partner.apiKey, invoice.id)).status).toBe('open');
    expect(await webhooks(partner)).toEqual([['payment.submitted', payment.id]]);
  });

  it('ministry-unavailable: 503 and pending while it is down, the same payment with the same key after', async () => {
    const partner = await partnerWithWebhook();
    const invoice = await planted(partner.apiKey, { scenario: 'ministry-unavailable', durationSeconds: 2 });
    const headers = { 'x-idempotency-key': randomUUID() };
    const down = await pay(ctx, partner.apiKey, { invoiceId: invoice.id }, headers);
    expect(down.statusCode).toBe(503);
    expect(down.json()).toEqual({ statusCode: 503, message: 'Service temporarily unavailable, please retry later', error: 'Service Unavailable', code: 'ministry_unavailable', requestId: down.headers['x-request-id'] });
    const stranded = await ctx.deps.db.selectFrom('payments').select(['id', 'status']).where('invoice_id', '=', invoice.id).execute();
    expect(stranded.map((p) => p.status)).toEqual(['pending']);
    // The confirmation job asking past the pending grace finds the ministry down too: still pending.
    ctx.advance(60_000);
    await ctx.runJobs();
    expect((await ctx.deps.db.selectFrom('payments').select('status').where('invoice_id', '=', invoice.id).execute()).map((p) => p.status)).toEqual(['pending']);
    // Retried as a partner would until the ministry is back: each retry inside the window is another 503.
    await expect
      .poll(async () => (await pay(ctx, partner.apiKey, { invoiceId: invoice.id }, headers)).statusCode, { timeout: 10_000, interval: 500 })
      .toBe(201);
    const retry = await pay(ctx, partner.apiKey, { invoiceId: invoice.id }, headers);
    expect(retry.statusCode).toBe(201);
    const created = retry.json<PaymentCreated>();
    expect(created.id).toBe(stranded[0]?.id);
    expect(created.status).toBe('submitted');
    expect((await timeline(created.id)).at(-1)).toEqual(ACCEPTED);
    expect(await ctx.deps.db.selectFrom('payments').select('id').where('invoice_id', '=', invoice.id).execute()).toEqual([{ id: created.id }]);
    expect(await webhooks(partner)).toEqual([['payment.submitted', created.id]]);
  });

  it('never-approve: never approved, expired delaySeconds after the payment', async () => {
    const partner = await partnerWithWebhook();
    const invoice = await planted(partner.apiKey, { scenario: 'never-approve', delaySeconds: 1 });
    const payment = await payCreated(partner.apiKey, { invoiceId: invoice.id });
    expect(payment.status).toBe('submitted');
    expect((await sandboxApprove(partner.apiKey, payment.id)).statusCode).toBe(409);
    await expect.poll(() => status(partner.apiKey, payment.id), { timeout: 10_000, interval: 200 }).toBe('canceled');
    expect(await timeline(payment.id)).toEqual([SUBMITTED, ACCEPTED, ['submitted', 'canceled', 'expired']]);
    expect((await getInvoice(ctx, partner.apiKey, invoice.id)).status).toBe('open');
    expect(await webhooks(partner)).toEqual([['payment.submitted', payment.id]]);
  });

  it('partial: a part-payment leaves the rest open', async () => {
    const partner = await partnerWithWebhook();
    const invoice = await planted(partner.apiKey, { scenario: 'partial', amount: 10000 });
    const payment = await payCreated(partner.apiKey, { invoiceId: invoice.id, amount: 4000 });
    expect(payment).toMatchObject({ status: 'submitted', amount: 4000 });
    expect((await sandboxApprove(partner.apiKey, payment.id)).statusCode).toBe(200);
    expect(await status(partner.apiKey, payment.id)).toBe('confirmed');
    expect(await getInvoice(ctx, partner.apiKey, invoice.id)).toMatchObject({ status: 'open', amount: 6000 });
    expect(await timeline(payment.id)).toEqual([SUBMITTED, ACCEPTED, ['submitted', 'confirmed', 'ministry_approved']]);
    expect(await webhooks(partner)).toEqual([['payment.submitted', payment.id], ['payment.confirmed', payment.id]]);
  });

  it('linked: two invoices of one payer, settled together by paying the first', async () => {
    const partner = await partnerWithWebhook();
    const first = await planted(partner.apiKey, { scenario: 'linked' });
    const listed = await searchInvoices(ctx, partner.apiKey, `ttd=${encodeURIComponent(first.payer?.register ?? '')}`);
    expect(listed.invoices).toHaveLength(2);
    const second = listed.invoices.find((i) => i.id !== first.id);
    const payment = await payCreated(partner.apiKey, { invoiceId: first.id });
    expect(payment.invoiceIds).toEqual([first.id, second?.id]);
    expect((await sandboxApprove(partner.apiKey, payment.id)).statusCode).toBe(200);
    expect(await status(partner.apiKey, payment.id)).toBe('confirmed');
    expect((await getInvoice(ctx, partner.apiKey, first.id)).status).toBe('paid');
    expect((await getInvoice(ctx, partner.apiKey, second?.id ?? '')).status).toBe('paid');
    expect(await timeline(payment.id)).toEqual([SUBMITTED, ACCEPTED, ['submitted', 'confirmed', 'ministry_approved']]);
    expect(await webhooks(partner)).toEqual([['payment.submitted', payment.id], ['payment.confirmed', payment.id]]);
  });

  it('already-paid: the invoice reads paid and paying it answers 422', async () => {
    const partner = await partnerWithWebhook();
    const invoice = await planted(partner.apiKey, { scenario: 'already-paid' });
    expect(invoice.status).toBe('paid');
    const res = await pay(ctx, partner.apiKey, { invoiceId: invoice.id });
    expect(res.statusCode).toBe(422);
    expect(await webhooks(partner)).toEqual([]);
  });
});

describe('after every scenario', () => {
  it("the books hold the service's invariants", async () => {
    const { apiKey } = await ctx.partner();
    for (const scenario of SANDBOX_SCENARIOS) await planted(apiKey, { scenario, durationSeconds: 1 });
    expect(await checkInvariants(kyselyRunner(ctx.deps.db))).toEqual([]);
  });
});

describe('in production', () => {
  let prod: TestContext;
  beforeAll(async () => {
    prod = await createTestContext({ config: { appEnv: 'production' } });
  });
  afterAll(() => prod.close());

  it('the scenario routes do not exist', async () => {
    const list = await prod.app.inject({ method: 'GET', url: '/api/v1/sandbox/scenarios' });
    expect(list.statusCode).toBe(404);
    const create = await prod.app.inject({ method: 'POST', url: '/api/v1/sandbox/invoices', payload: { scenario: 'approve' } });
    expect(create.statusCode).toBe(404);
    const doc = (await prod.app.inject({ method: 'GET', url: '/api/v1/openapi.json' })).json<{ paths: Record<string, unknown> }>();
    expect(Object.keys(doc.paths).filter((p) => p.startsWith('/sandbox'))).toEqual([]);
  });
});
