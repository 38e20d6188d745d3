import { randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestContext, dropSchema, type TestContext } from '../helpers/test-context.js';
import { testConfig } from '../helpers/test-config.js';
import { checkInvariants, kyselyRunner } from '../helpers/invariants.js';
import { addOwnInvoice } from '../helpers/own-invoice.js';
import { approve, getInvoice, lookupRef, pay, payOk, type Payment } from '../helpers/api.js';
import type { Source } from '../../src/domain/vocabulary.js';

/*
 * A ministry whose invoice view lags behind its own approvals: for a while after it approves a
 * payment, lookups, searches and its own checks of a new payment still show the invoice as it was.
 * Whatever that view says, an invoice never collects more than it billed.
 */

const LAG_SECONDS = 600;

/** The confirmation job's pass that picks up the ministry's approval (the test clock moved past the poll). */
async function confirmVia(ctx: TestContext, ministry: TestContext, refNum: string): Promise<void> {
  expect((await approve(ministry, refNum)).statusCode).toBe(200);
  ctx.advance(ctx.config.confirmPollMs + 1000);
  await ctx.runJobs();
}

async function lagView(ctx: TestContext, source: Source, refNum: string): Promise<void> {
  expect((await ctx.sim('/__control/invoices/lag', { refNum, source, seconds: LAG_SECONDS })).statusCode).toBe(200);
}

/** What the ministry shows for the invoice now (its lagging view included). */
async function ministryView(ctx: TestContext, source: Source, refNum: string) {
  const invoice = await ctx.deps.ministries[source].getByRef(refNum);
  return invoice && { status: invoice.status, amount: invoice.amount };
}

/** Every payment of the invoice by status, and what the confirmed ones collected, straight from the database. */
async function books(ctx: TestContext, invoiceId: string) {
  const { rows } = await sql<{ status: string; n: string; total: string }>`
    SELECT status, count(*)::text AS n, sum(amount)::text AS total FROM payments WHERE invoice_id = ${invoiceId}::uuid GROUP BY status ORDER BY status`.execute(ctx.deps.db);
  return Object.fromEntries(rows.map((r) => [r.status, { n: Number(r.n), total: Number(r.total) }]));
}

/**
 * Pays an invoice whole, then part, through two service instances: `first` pays and confirms,
 * `second` (another partner) looks the invoice up while the ministry's view still says open.
 */
interface Instances {
  first: TestContext;
  second: TestContext;
  /** The context whose simulator both instances talk to. */
  ministry: TestContext;
}

function lagCases(instances: () => Instances) {
  it.each(['mof', 'etax', 'police'] as const)('%s: a whole-balance payment leaves nothing to pay while the view still says open', async (source) => {
    const { first, second, ministry } = instances();
    const payer = await first.partner();
    const other = await second.partner();
    const { refNum } = await addOwnInvoice(ministry, source, { amount: 1000 });
    const invoice = await lookupRef(first, payer.apiKey, refNum);
    await lagView(ministry, source, refNum);

    const paid = await payOk(first, payer.apiKey, { invoiceId: invoice.id });
    await confirmVia(first, ministry, refNum);
    expect(await ministryView(ministry, source, refNum)).toEqual({ status: 'open', amount: '1000' });
    expect(await getInvoice(first, payer.apiKey, invoice.id)).toMatchObject({ status: 'paid' });

    // The other partner finds the invoice through the lagging view, and cannot pay it again.
    const seen = await lookupRef(second, other.apiKey, refNum);
    expect(seen).toMatchObject({ id: invoice.id, status: 'paid' });
    const again = await pay(second, other.apiKey, { invoiceId: invoice.id });
    expect(again.statusCode, again.body).toBe(422);
    expect(again.json()).toEqual({ success: false, refNum, message: 'Invoice is already paid', code: 'invoice_not_payable', requestId: again.headers['x-request-id'] });

    expect((await first.api(payer.apiKey, { method: 'GET', url: `/api/v1/payments/${paid.id}` })).json<Payment>().status).toBe('confirmed');
    expect(await books(first, invoice.id)).toEqual({ confirmed: { n: 1, total: 1000 } });
    expect(await checkInvariants(kyselyRunner(first.deps.db))).toEqual([]);
  });

  it.each(['mof', 'etax', 'police'] as const)('%s: a part-payment leaves what our books owe, and the view cannot raise it', async (source) => {
    const { first, second, ministry } = instances();
    const payer = await first.partner();
    const other = await second.partner();
    const { refNum } = await addOwnInvoice(ministry, source, { amount: 1000, allowPartial: true });
    const invoice = await lookupRef(first, payer.apiKey, refNum);
    await lagView(ministry, source, refNum);

    await payOk(first, payer.apiKey, { invoiceId: invoice.id, amount: 400 });
    await confirmVia(first, ministry, refNum);
    expect(await ministryView(ministry, source, refNum)).toEqual({ status: 'open', amount: '1000' });
    expect(await getInvoice(first, payer.apiKey, invoice.id)).toMatchObject({ status: 'open', amount: 600 });

    // Refreshed from the lagging view through the other instance, the balance stays what our books owe.
    expect(await lookupRef(second, other.apiKey, refNum)).toMatchObject({ id: invoice.id, status: 'open', amount: 600 });
    const refreshed = await second.api(other.apiKey, { method: 'GET', url: `/api/v1/invoices/${invoice.id}/refresh` });
    expect(refreshed.statusCode, refreshed.body).toBe(200);
    expect(refreshed.json()).toMatchObject({ status: 'open', amount: 600 });
    // The old balance, which the lagging ministry would take, is refused.
    const tooMuch = await pay(second, other.apiKey, { invoiceId: invoice.id, amount: 1000 });
    expect(tooMuch.statusCode, tooMuch.body).toBe(422);

    await payOk(second, other.apiKey, { invoiceId: invoice.id });
    await confirmVia(second, ministry, refNum);
    expect(await getInvoice(second, other.apiKey, invoice.id)).toMatchObject({ status: 'paid' });
    expect(await books(first, invoice.id)).toEqual({ confirmed: { n: 2, total: 1000 } });
    expect(await checkInvariants(kyselyRunner(first.deps.db))).toEqual([]);
  });
}

describe('a ministry view lagging behind its approvals (one instance)', () => {
  let ctx: TestContext;
  beforeAll(async () => {
    ctx = await createTestContext();
  });
  afterAll(() => ctx.close());

  lagCases(() => ({
    first: ctx,
    second: ctx,
    ministry: ctx,
  }));
});

const base = testConfig();

describe.skipIf(!base.databaseUrl)('a ministry view lagging behind its approvals (two instances, one database, one ministry)', { tags: ['postgres'] }, () => {
  const schema = `t_${randomBytes(6).toString('hex')}`;
  let a: TestContext;
  let b: TestContext;
  beforeAll(async () => {
    a = await createTestContext({ reuseSchema: schema });
    b = await createTestContext({ reuseSchema: schema, ministryUrl: a.simulatorUrl });
  });
  afterAll(async () => {
    await b?.close();
    await a?.close();
    if (base.databaseUrl) await dropSchema(base.databaseUrl, schema);
  });

  lagCases(() => ({
    first: a,
    second: b,
    ministry: a,
  }));
});
