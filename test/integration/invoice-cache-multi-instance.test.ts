import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testConfig } from '../helpers/test-config.js';
import { createTestContext, dropSchema, type TestContext } from '../helpers/test-context.js';
import { addOwnInvoice } from '../helpers/own-invoice.js';
import { approve, getInvoice, getPayment, lookupRef, payOk, type Payment } from '../helpers/api.js';
import type { InvoiceFixture } from '../../simulator/fixtures.schema.js';

const base = testConfig();
const enabled = Boolean(base.databaseUrl && base.redisUrl);
const schema = `t_${randomBytes(6).toString('hex')}`;
// Long enough that only an announcement over Redis, not expiry, can refresh the other instance.
const config = { invoiceCache: { ttlMs: 600_000, maxEntries: 1000 } };

let a: TestContext;
let b: TestContext;

async function statusVia(ctx: TestContext, key: string, id: string): Promise<string> {
  return (await getInvoice(ctx, key, id)).status;
}

/** Bounds the waits only so a regression fails instead of hanging; nothing asserts a time. */
const POLL = { timeout: 5000, interval: 50 };

/** An invoice of the test's own, at both instances' simulators (each context has its own). */
async function sharedOwnInvoice(): Promise<InvoiceFixture> {
  const invoice = await addOwnInvoice(a, 'mof');
  expect((await b.sim('/__control/invoices', { invoices: [invoice] })).statusCode).toBe(200);
  return invoice;
}

describe.skipIf(!enabled)('invoice cache across two instances (shared PostgreSQL and Redis)', { tags: ['postgres', 'redis'] }, () => {
  beforeAll(async () => {
    a = await createTestContext({ reuseSchema: schema, config });
    b = await createTestContext({ reuseSchema: schema, config });
  });

  afterAll(async () => {
    await a?.close();
    await b?.close();
    if (base.databaseUrl) await dropSchema(base.databaseUrl, schema);
  });

  it('shows a payment confirmed through one instance on the other without waiting for expiry', async () => {
    const { apiKey } = await a.partner();
    const { refNum } = await sharedOwnInvoice();
    const viaA = await lookupRef(a, apiKey, refNum);
    const viaB = await lookupRef(b, apiKey, refNum);
    expect(viaB.id).toBe(viaA.id);
    expect(await statusVia(b, apiKey, viaA.id)).toBe('open');

    const payment = await payOk(a, apiKey, { invoiceId: viaA.id });
    expect((await approve(a, refNum)).statusCode).toBe(200);
    const confirmed = (await getPayment(a, apiKey, payment.id)).json<Payment>();
    expect(confirmed.status).toBe('confirmed');

    expect(await statusVia(a, apiKey, viaA.id)).toBe('paid');
    // The announcement crosses Redis on its own time: B is asked until it has heard it.
    await expect.poll(() => statusVia(b, apiKey, viaA.id), POLL).toBe('paid');
  });

  it('shows a fresher copy stored through one instance on the other', async () => {
    const { apiKey } = await a.partner();
    const invoice = await sharedOwnInvoice();
    const viaA = await lookupRef(a, apiKey, invoice.refNum);
    expect((await lookupRef(b, apiKey, invoice.refNum)).id).toBe(viaA.id);
    expect(await statusVia(b, apiKey, viaA.id)).toBe('open');

    // Paid at the ministry through another channel; instance A looks it up again.
    expect((await a.sim('/__control/invoices', { invoices: [{ ...invoice, status: 'paid' }] })).statusCode).toBe(200);
    const fresh = await lookupRef(a, apiKey, invoice.refNum);
    expect(fresh.status).toBe('paid');

    await expect.poll(() => statusVia(b, apiKey, viaA.id), POLL).toBe('paid');
  });
});
