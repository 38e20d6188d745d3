import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createTestContext, type TestContext } from '../helpers/test-context.js';
import { OTHER_REG, PLATE, REG, TAX_REF } from '../helpers/fixtures.js';
import { addOwnInvoice, unique } from '../helpers/own-invoice.js';
import { badRequest, type Invoice, type InvoiceList } from '../helpers/api.js';


const INVOICE_KEYS = ['amount', 'description', 'dueDate', 'id', 'issuedAt', 'payee', 'payer', 'status', 'vehicleNo'];

let ctx: TestContext;
let key: string;

beforeAll(async () => {
  ctx = await createTestContext();
  key = (await ctx.partner()).apiKey;
});
afterAll(() => ctx.close());

const get = (url: string, apiKey = key) => ctx.api(apiKey, { method: 'GET', url });
const search = async (query: string, apiKey = key) => {
  const res = await get(`/api/v1/invoices?${query}`, apiKey);
  return { res, body: res.json<InvoiceList>() };
};

describe('GET /invoices', () => {
  it('answers a taxpayer search from all three sources with total as the sum of amounts', async () => {
    const { res, body } = await search(`ttd=${REG}`);
    expect(res.statusCode).toBe(200);
    const amounts = body.invoices.map((i) => i.amount).sort((a, b) => a - b);
    expect(amounts).toEqual([2000, 3000, 5000, 10000, 10000, 12000.5, 25000.25, 50000]);
    expect(body.total).toBe(117000.75);
    expect(body.invoices.every((i) => i.payer?.register === REG)).toBe(true);
  });

  it('returns exactly the SPEC fields and never names the source system or ref number', async () => {
    const { res, body } = await search(`ttd=${REG}`);
    for (const invoice of body.invoices) {
      const keys = Object.keys(invoice).filter((k) => k !== 'year').sort();
      expect(keys).toEqual(INVOICE_KEYS);
    }
    expect(res.body).not.toMatch(/mof|etax|police|source|ref_?num|MOF-T|ET-T|P-T-/i);
  });

  it('marks an open invoice past its due date as overdue and passes year through as given', async () => {
    const { body } = await search(`ttd=${REG}`);
    expect(body.invoices.filter((i) => i.status === 'overdue').map((i) => i.amount)).toEqual([5000]);
    expect(body.invoices.filter((i) => i.status === 'paid')).toHaveLength(1);
    expect(body.invoices.find((i) => i.amount === 12000.5)?.year).toBe(2025);
    expect(body.invoices.find((i) => i.amount === 25000.25)?.year).toBe('2025');
    expect(body.invoices.find((i) => i.amount === 50000)).not.toHaveProperty('year');
  });

  it('keeps one stable UUID per ministry invoice across repeated searches and filters', async () => {
    const first = (await search(`ttd=${REG}`)).body.invoices.map((i) => i.id).sort();
    const second = (await search(`ttd=${REG}`)).body.invoices.map((i) => i.id).sort();
    expect(second).toEqual(first);
    const byTaxRef = (await search(`taxRef=${TAX_REF}`)).body.invoices;
    expect(byTaxRef).toHaveLength(1);
    expect(first).toContain(byTaxRef[0]?.id);
  });

  it('finds by vehicle plate, including an invoice without a payer', async () => {
    const { res, body } = await search(`vehicle=${encodeURIComponent(PLATE)}`);
    expect(res.statusCode).toBe(200);
    expect(body.invoices.map((i) => i.amount).sort()).toEqual([50000, 7000]);
    expect(body.invoices.find((i) => i.amount === 7000)?.payer).toBeNull();
    expect(body.invoices.every((i) => i.vehicleNo === PLATE)).toBe(true);
  });

  it('answers an unknown taxpayer with an empty list and zero total', async () => {
    const { res, body } = await search('ttd=0000000');
    expect(res.statusCode).toBe(200);
    expect(body).toEqual({ invoices: [], total: 0 });
  });
});

describe('single invoice endpoints', () => {
  it('reads the stored copy by id, and refresh re-reads the ministry', async () => {
    // Its own invoice: changing a shared fixture at the ministry would change every other search.
    const own = await addOwnInvoice(ctx, 'etax', { amount: 25000.25, taxRef: unique('TR'), year: '2025' });
    const { body } = await search(`taxRef=${own.taxRef}`);
    const id = body.invoices[0]?.id as string;
    const stored = await get(`/api/v1/invoices/${id}`);
    expect(stored.statusCode).toBe(200);
    expect(stored.json()).toEqual(body.invoices[0]);

    await ctx.sim('/__control/invoices', { invoices: [{ ...own, amount: 26000, issuedAt: null }] });
    expect((await get(`/api/v1/invoices/${id}`)).json<Invoice>().amount).toBe(25000.25);
    const refreshed = await get(`/api/v1/invoices/${id}/refresh`);
    expect(refreshed.statusCode).toBe(200);
    expect(refreshed.json<Invoice>()).toMatchObject({ id, amount: 26000 });
    expect((await get(`/api/v1/invoices/${id}`)).json<Invoice>().amount).toBe(26000);
  });

  it('fetches live by ref number, with a stable id, and 404 for an unknown ref', async () => {
    const res = await get('/api/v1/invoices/ref/P-T-1');
    expect(res.statusCode).toBe(200);
    const invoice = res.json<Invoice>();
    expect(invoice.amount).toBe(50000);
    expect(res.body).not.toMatch(/P-T-1|police/);
    const again = await get('/api/v1/invoices/ref/P-T-1');
    expect(again.json<Invoice>().id).toBe(invoice.id);
    const missing = await get('/api/v1/invoices/ref/NOPE-404');
    expect(missing.statusCode).toBe(404);
    expect(missing.json()).toMatchObject({ statusCode: 404, error: 'Not Found' });
  });

  it('answers 400 for a malformed id and 404 for an unknown one', async () => {
    for (const url of ['/api/v1/invoices/not-a-uuid', '/api/v1/invoices/not-a-uuid/refresh', '/api/v1/invoices/1234']) {
      const res = await get(url);
      expect(res.statusCode).toBe(400);
      expect(res.json()).toEqual(badRequest(res, ['/id', 'id must be a UUID']));
    }
    for (const url of ['/api/v1/invoices/0b8f7a4e-1c2d-4e5f-9a6b-7c8d9e0f1a2b', '/api/v1/invoices/0b8f7a4e-1c2d-4e5f-9a6b-7c8d9e0f1a2b/refresh']) {
      const res = await get(url);
      expect(res.statusCode).toBe(404);
      expect(res.json()).toEqual({ statusCode: 404, message: 'Invoice not found', error: 'Not Found', code: 'not_found', requestId: res.headers['x-request-id'] });
    }
  });

  it('hides an invoice from a partner that never retrieved it', async () => {
    const { body } = await search(`ttd=${REG}`);
    const id = body.invoices[0]?.id as string;
    const other = (await ctx.partner()).apiKey;
    expect((await get(`/api/v1/invoices/${id}`, other)).statusCode).toBe(404);
    expect((await get(`/api/v1/invoices/${id}/refresh`, other)).statusCode).toBe(404);
    await search(`ttd=${REG}`, other);
    expect((await get(`/api/v1/invoices/${id}`, other)).statusCode).toBe(200);
  });
});

describe('partial upstream failure', () => {
  // Each test clears its faults in `finally`; this also covers a test that fails before its `try`.
  afterEach(async () => {
    for (const source of ['mof', 'etax', 'police']) await ctx.sim('/__control/faults', { source, mode: 'none' });
  });

  it('answers from the other sources and stored copies when one source errors', async () => {
    // A taxpayer only etax knows and nobody has searched yet (stored copies are shared by all
    // partners, so a fixture taxpayer another test searched would be answered from them).
    const unseen = unique('R');
    await addOwnInvoice(ctx, 'etax', { payer: { register: unseen, name: 'Бусад' } });
    const before = (await search(`ttd=${REG}`)).body;
    await ctx.sim('/__control/faults', { source: 'etax', mode: 'error' });
    try {
      const { res, body } = await search(`ttd=${REG}`);
      expect(res.statusCode).toBe(200);
      expect(body.invoices.map((i) => i.id).sort()).toEqual(before.invoices.map((i) => i.id).sort());
      const fresh = (await search(`ttd=${unseen}`)).body;
      expect(fresh.invoices).toEqual([]);
    } finally {
      await ctx.sim('/__control/faults', { source: 'etax', mode: 'none' });
    }
  });

  it('answers from the others when one source times out', async () => {
    await ctx.sim('/__control/faults', { source: 'police', mode: 'timeout' });
    try {
      const { res, body } = await search(`ttd=${OTHER_REG}`);
      expect(res.statusCode).toBe(200);
      expect(body.invoices.map((i) => i.amount)).toEqual([10000]);
    } finally {
      await ctx.sim('/__control/faults', { source: 'police', mode: 'none' });
    }
  });

  it('answers 503 with a generic body when no source answers and nothing is stored', async () => {
    for (const source of ['mof', 'etax', 'police']) await ctx.sim('/__control/faults', { source, mode: 'error' });
    try {
      const { res } = await search('ttd=5555555');
      expect(res.statusCode).toBe(503);
      expect(res.json()).toEqual({ statusCode: 503, message: 'Service temporarily unavailable, please retry later', error: 'Service Unavailable', code: 'ministry_unavailable', requestId: res.headers['x-request-id'] });
      const ref = await get('/api/v1/invoices/ref/MOF-T-1');
      expect(ref.statusCode).toBe(503);
      expect(ref.body).not.toMatch(/mof|etax|police|500/i);
    } finally {
      for (const source of ['mof', 'etax', 'police']) await ctx.sim('/__control/faults', { source, mode: 'none' });
    }
  });
});
