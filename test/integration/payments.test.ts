import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestContext, type TestContext } from '../helpers/test-context.js';
import { REG } from '../helpers/fixtures.js';
import { checkInvariants, kyselyRunner } from '../helpers/invariants.js';
import { addOwnInvoice } from '../helpers/own-invoice.js';
import { decodeQrImage, referenceCrc16, topLevelTags } from '../helpers/qr-decode.js';

interface Invoice {
  id: string;
  amount: number;
  status: string;
}
interface Created {
  success: boolean;
  id: string;
  status: string;
  amount: number;
  invoiceId: string;
  invoiceIds: string[];
  message?: string;
  qrpay: { qrText: string; qrImage: string; shortUrl?: string; urls: { name: string; description: string; logo: string; link: string }[] };
}

let ctx: TestContext;
let key: string;
let byRef: Map<string, Invoice>;

beforeAll(async () => {
  ctx = await createTestContext();
  key = (await ctx.partner()).apiKey;
  byRef = await lookup(key);
});
afterAll(() => ctx.close());

const REFS = ['MOF-T-1', 'MOF-T-OVERDUE', 'MOF-T-PAID', 'MOF-T-REJECT', 'MOF-T-LINK-A', 'MOF-T-LINK-B', 'ET-T-1', 'P-T-1'];

/** Ref lookups give each invoice's service id and record it as retrieved by the partner. */
async function lookup(apiKey: string): Promise<Map<string, Invoice>> {
  const map = new Map<string, Invoice>();
  for (const ref of REFS) {
    const res = await ctx.api(apiKey, { method: 'GET', url: `/api/v1/invoices/ref/${ref}` });
    map.set(ref, res.json<Invoice>());
  }
  return map;
}

const idOf = (ref: string) => byRef.get(ref)?.id as string;
const pay = (payload: object, headers: Record<string, string> = {}, apiKey = key) =>
  ctx.api(apiKey, { method: 'POST', url: '/api/v1/payments', payload, headers });
const getPayment = (id: string, apiKey = key) => ctx.api(apiKey, { method: 'GET', url: `/api/v1/payments/${id}` });
const cancel = (id: string, apiKey = key) => ctx.api(apiKey, { method: 'DELETE', url: `/api/v1/payments/${id}` });
const invoice = async (id: string) => (await ctx.api(key, { method: 'GET', url: `/api/v1/invoices/${id}` })).json<Invoice>();
const approve = (refNum: string) => ctx.sim('/__control/approve', { refNum });

/** An invoice no other test touches, retrieved by `apiKey` so it may pay it; its service id and refNum. */
async function ownInvoice(source: 'mof' | 'etax' | 'police', extra: Parameters<typeof addOwnInvoice>[2] = {}, apiKey = key) {
  const { refNum } = await addOwnInvoice(ctx, source, extra);
  const id = (await ctx.api(apiKey, { method: 'GET', url: `/api/v1/invoices/ref/${refNum}` })).json<Invoice>().id;
  return { id, refNum };
}

describe('payment lifecycle', () => {
  it('pays, confirms, cancels and pays again', async () => {
    const invoiceId = idOf('MOF-T-1');
    const res = await pay({ invoiceId });
    expect(res.statusCode).toBe(201);
    const created = res.json<Created>();
    expect(created).toMatchObject({ success: true, status: 'submitted', amount: 12000.5, invoiceId, invoiceIds: [invoiceId] });
    expect(Object.keys(created).sort()).toEqual(['amount', 'id', 'invoiceId', 'invoiceIds', 'qrpay', 'status', 'success']);
    // The PNG's base64 spells random letters ("mOF" in one CI run); what it encodes is qrText,
    // which stays in the checked text and is compared with the decoded image below.
    const withoutImage = JSON.stringify({ ...created, qrpay: { ...created.qrpay, qrImage: '' } });
    expect(withoutImage).not.toMatch(/MOF-T|mof|ref_?num/i);

    const { qrpay } = created;
    expect(decodeQrImage(qrpay.qrImage)).toBe(qrpay.qrText);
    expect(qrpay.urls.length).toBeGreaterThan(5);
    for (const link of qrpay.urls) {
      expect(link.link).toContain(encodeURIComponent(qrpay.qrText));
      expect(link.name && link.description && link.logo).toBeTruthy();
    }
    expect(qrpay.shortUrl).toContain(created.id);

    const before = (await getPayment(created.id)).json<Record<string, unknown>>();
    expect(before).toEqual({ id: created.id, status: 'submitted', amount: 12000.5, invoiceId, invoiceIds: [invoiceId] });

    expect((await approve('MOF-T-1')).statusCode).toBe(200);
    const confirmed = (await getPayment(created.id)).json<{ status: string; paidAt?: string }>();
    expect(confirmed.status).toBe('confirmed');
    expect(Number.isNaN(Date.parse(confirmed.paidAt ?? ''))).toBe(false);
    expect((await invoice(invoiceId)).status).toBe('paid');

    const events = await ctx.deps.db.selectFrom('events').select(['event', 'payload']).orderBy('created_at').execute();
    const mine = events.filter((e) => (e.payload as { id: string }).id === created.id);
    expect(mine).toEqual([
      { event: 'payment.submitted', payload: { id: created.id, invoiceId } },
      { event: 'payment.confirmed', payload: { id: created.id, amount: 12000.5 } },
    ]);

    const paidAgain = await pay({ invoiceId });
    expect(paidAgain.statusCode).toBe(422);
    expect(paidAgain.json()).toEqual({ success: false, refNum: 'MOF-T-1', message: 'Invoice is already paid' });

    const canceled = await cancel(created.id);
    expect(canceled.statusCode).toBe(200);
    expect(canceled.json()).toEqual({ id: created.id, canceled: true });
    expect((await invoice(invoiceId)).status).toBe('open');
    expect((await getPayment(created.id)).json()).toMatchObject({ status: 'canceled' });
    expect((await cancel(created.id)).statusCode).toBe(409);

    const again = await pay({ invoiceId });
    expect(again.statusCode).toBe(201);
    expect(again.json<Created>().id).not.toBe(created.id);
  });

  it('confirms in the background job without a client poll', async () => {
    const invoiceId = idOf('P-T-1');
    const created = (await pay({ invoiceId })).json<Created>();
    await approve('P-T-1');
    ctx.advance(ctx.config.confirmPollMs + 1000);
    await ctx.runJobs();
    const row = await ctx.deps.db.selectFrom('payments').select(['status', 'paid_at']).where('id', '=', created.id).executeTakeFirstOrThrow();
    expect(row.status).toBe('confirmed');
    expect(row.paid_at).not.toBeNull();
    expect((await invoice(invoiceId)).status).toBe('paid');
  });

  it('covers every invoice the ministry settles together', async () => {
    const a = idOf('MOF-T-LINK-A');
    const b = idOf('MOF-T-LINK-B');
    const created = (await pay({ invoiceId: a })).json<Created>();
    expect(created.invoiceId).toBe(a);
    expect(created.invoiceIds).toEqual([a, b]);
    expect((await pay({ invoiceId: b })).statusCode).toBe(422);
    await approve('MOF-T-LINK-A');
    expect((await getPayment(created.id)).json()).toMatchObject({ status: 'confirmed', invoiceIds: [a, b] });
    expect((await invoice(a)).status).toBe('paid');
    expect((await invoice(b)).status).toBe('paid');
    await cancel(created.id);
    expect((await invoice(b)).status).toBe('open');
  });

  it('pays an overdue invoice and a partial amount', async () => {
    const res = await pay({ invoiceId: idOf('MOF-T-OVERDUE'), amount: 1500.25 });
    expect(res.statusCode).toBe(201);
    expect(res.json<Created>()).toMatchObject({ status: 'submitted', amount: 1500.25 });
  });
});

describe('refusals', () => {
  it('answers 422 with the ref number when the ministry refuses, and records a failed payment', async () => {
    const res = await pay({ invoiceId: idOf('MOF-T-REJECT') });
    expect(res.statusCode).toBe(422);
    const body = res.json<{ success: boolean; refNum: string; message: string }>();
    expect(body.success).toBe(false);
    expect(body.refNum).toBe('MOF-T-REJECT');
    expect(body.message.length).toBeGreaterThan(0);
    const failed = await ctx.deps.db.selectFrom('payments').select('status').where('invoice_id', '=', idOf('MOF-T-REJECT')).execute();
    expect(failed.map((f) => f.status)).toEqual(['failed']);
  });

  it('refuses an invoice paid at the ministry and an amount above the balance', async () => {
    expect((await pay({ invoiceId: idOf('MOF-T-PAID') })).json()).toEqual({ success: false, refNum: 'MOF-T-PAID', message: 'Invoice is already paid' });
    const over = await pay({ invoiceId: idOf('ET-T-1'), amount: 25000.26 });
    expect(over.statusCode).toBe(422);
    expect(over.json()).toEqual({ success: false, refNum: 'ET-T-1', message: 'Amount does not match the invoice balance' });
  });

  it('validates the body strictly', async () => {
    const invoiceId = idOf('ET-T-1');
    const cases: [object, string][] = [
      [{ invoiceId, extra: 1 }, 'property extra should not exist'],
      [{ invoiceId, amount: '100' }, 'amount must be of type number'],
      [{ invoiceId: 'nope' }, 'invoiceId must be a UUID'],
      [{}, 'property invoiceId is required'],
      [{ invoiceId, amount: 10.123 }, 'amount must be a positive number with at most 2 decimals'],
    ];
    for (const [payload, message] of cases) {
      const res = await pay(payload);
      expect(res.statusCode).toBe(400);
      expect(res.json()).toEqual({ statusCode: 400, message: [message], error: 'Bad Request' });
    }
    const arr = await pay([{ invoiceId }]);
    expect(arr.statusCode).toBe(400);
    const neg = await pay({ invoiceId, amount: -5 });
    expect(neg.statusCode).toBe(400);
  });

  it('answers 404 for an unknown invoice or one the partner never retrieved', async () => {
    expect((await pay({ invoiceId: '0b8f7a4e-1c2d-4e5f-9a6b-7c8d9e0f1a2b' })).statusCode).toBe(404);
    const other = await ctx.partner();
    expect((await pay({ invoiceId: idOf('ET-T-1') }, {}, other.apiKey)).statusCode).toBe(404);
  });

  it('answers 409 with the status when canceling a failed payment', async () => {
    const refusing = await ownInvoice('mof', { rejectPayment: true });
    expect((await pay({ invoiceId: refusing.id })).statusCode).toBe(422);
    const failed = await ctx.deps.db.selectFrom('payments').select('id').where('invoice_id', '=', refusing.id).where('status', '=', 'failed').executeTakeFirstOrThrow();
    const res = await cancel(failed.id);
    expect(res.statusCode).toBe(409);
    expect(res.json()).toEqual({ statusCode: 409, message: 'Payment cannot be canceled in status failed', error: 'Conflict' });
  });
});

describe('isolation', () => {
  it("answers 404 to another partner's payment ids", async () => {
    const created = (await pay({ invoiceId: idOf('ET-T-1') })).json<Created>();
    const other = await ctx.partner();
    expect((await getPayment(created.id, other.apiKey)).statusCode).toBe(404);
    expect((await cancel(created.id, other.apiKey)).statusCode).toBe(404);
    expect((await getPayment(created.id)).statusCode).toBe(200);
    expect((await getPayment('bad-id')).statusCode).toBe(400);
    await cancel(created.id);
  });
});

describe('QR standards', () => {
  async function qrFor(standard: 'qrpay' | 'govstd', ref: string) {
    const p = await ctx.partner({ qrStandard: standard });
    await ctx.api(p.apiKey, { method: 'GET', url: `/api/v1/invoices/ref/${ref}` });
    const res = await pay({ invoiceId: idOf(ref) }, {}, p.apiKey);
    expect(res.statusCode).toBe(201);
    const created = res.json<Created>();
    await cancel(created.id, p.apiKey);
    return created.qrpay.qrText;
  }

  it('uses merchant template 27 for qrpay and 26 for govstd, with a valid CRC', async () => {
    const qrpay = topLevelTags(await qrFor('qrpay', 'ET-T-1'));
    const govstd = topLevelTags(await qrFor('govstd', 'ET-T-1'));
    expect(qrpay.has('27')).toBe(true);
    expect(qrpay.has('26')).toBe(false);
    expect(govstd.has('26')).toBe(true);
    expect(govstd.has('27')).toBe(false);
    for (const tags of [qrpay, govstd]) {
      expect(tags.get('00')).toBe('01');
      expect(tags.get('01')).toBe('12');
      expect(tags.get('53')).toBe('496');
      expect(tags.get('58')).toBe('MN');
      expect(tags.get('54')).toMatch(/^25000\.25$/);
      expect(tags.has('59') && tags.has('60') && tags.has('62')).toBe(true);
    }
  });

  it('ends every payload with a CRC that an independent implementation agrees with', async () => {
    const text = await qrFor('govstd', 'ET-T-1');
    expect(text.slice(-8, -4)).toBe('6304');
    expect(text.slice(-4)).toBe(referenceCrc16(text.slice(0, -4)));
  });
});

describe('idempotency', () => {
  it('replays the first response with the QR, and refuses a different body with the same key', async () => {
    const headers = { 'x-idempotency-key': 'idem-1' };
    const first = await pay({ invoiceId: idOf('ET-T-1') }, headers);
    expect(first.statusCode).toBe(201);
    const replay = await pay({ invoiceId: idOf('ET-T-1') }, headers);
    expect(replay.statusCode).toBe(201);
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(replay.json()).toEqual({ ...first.json<Created>(), message: 'idempotent' });
    const different = await pay({ invoiceId: idOf('ET-T-1'), amount: 1 }, headers);
    expect(different.statusCode).toBe(422);
    await cancel(first.json<Created>().id);
  });

  it('scopes keys per partner', async () => {
    const other = await ctx.partner();
    await lookup(other.apiKey);
    const headers = { 'x-idempotency-key': 'shared-key' };
    const mine = (await pay({ invoiceId: idOf('ET-T-1') }, headers)).json<Created>();
    await cancel(mine.id);
    const theirs = await pay({ invoiceId: idOf('ET-T-1') }, headers, other.apiKey);
    expect(theirs.statusCode).toBe(201);
    expect(theirs.headers['idempotent-replayed']).toBeUndefined();
    expect(theirs.json<Created>().id).not.toBe(mine.id);
    await cancel(theirs.json<Created>().id, other.apiKey);
  });

  it('creates exactly one payment for 20 concurrent requests with the same key', async () => {
    const p = await ctx.partner();
    await ctx.api(p.apiKey, { method: 'GET', url: '/api/v1/invoices/ref/ET-T-1' });
    const headers = { 'x-idempotency-key': 'burst-key' };
    const results = await Promise.all(Array.from({ length: 20 }, () => pay({ invoiceId: idOf('ET-T-1') }, headers, p.apiKey)));
    const codes = results.map((r) => r.statusCode);
    expect(codes.every((c) => c === 201 || c === 409)).toBe(true);
    const ids = new Set(results.filter((r) => r.statusCode === 201).map((r) => r.json<Created>().id));
    expect(ids.size).toBe(1);
    const rows = await ctx.deps.db.selectFrom('payments').select('id').where('partner_id', '=', p.id).execute();
    expect(rows).toHaveLength(1);
    expect(await checkInvariants(kyselyRunner(ctx.deps.db))).toEqual([]);
    await cancel([...ids][0] as string, p.apiKey);
  });

  it('lets only one of 20 concurrent payments for one invoice through', async () => {
    const results = await Promise.all(Array.from({ length: 20 }, () => pay({ invoiceId: idOf('ET-T-1') })));
    const created = results.filter((r) => r.statusCode === 201);
    expect(created).toHaveLength(1);
    expect(results.filter((r) => r.statusCode === 422)).toHaveLength(19);
    const active = await ctx.deps.db
      .selectFrom('payments')
      .select('id')
      .where('invoice_id', '=', idOf('ET-T-1'))
      .where('status', 'in', ['pending', 'submitted', 'confirmed'])
      .execute();
    expect(active).toHaveLength(1);
    expect(await checkInvariants(kyselyRunner(ctx.deps.db))).toEqual([]);
    await cancel(created[0]?.json<Created>().id as string);
    expect(await checkInvariants(kyselyRunner(ctx.deps.db))).toEqual([]);
  });
});

describe('upstream failure during payment', () => {
  it('answers 503, leaves the payment pending, and lets the job fail it when the ministry never saw it', async () => {
    await ctx.sim('/__control/faults', { source: 'etax', mode: 'error' });
    const res = await pay({ invoiceId: idOf('ET-T-1') });
    expect(res.statusCode).toBe(503);
    expect(res.json()).toEqual({ statusCode: 503, message: 'Service temporarily unavailable, please retry later', error: 'Service Unavailable' });
    await ctx.sim('/__control/faults', { source: 'etax', mode: 'none' });
    const pending = await ctx.deps.db.selectFrom('payments').select('id').where('status', '=', 'pending').execute();
    expect(pending).toHaveLength(1);
    ctx.advance(60_000);
    await ctx.runJobs();
    const row = await ctx.deps.db.selectFrom('payments').select('status').where('id', '=', pending[0]?.id as string).executeTakeFirstOrThrow();
    expect(row.status).toBe('failed');
    const retry = await pay({ invoiceId: idOf('ET-T-1') });
    expect(retry.statusCode).toBe(201);
    await cancel(retry.json<Created>().id);
  });

  it('resumes the same payment when the client retries with its idempotency key', async () => {
    const headers = { 'x-idempotency-key': 'retry-after-503' };
    await ctx.sim('/__control/faults', { source: 'etax', mode: 'error' });
    expect((await pay({ invoiceId: idOf('ET-T-1') }, headers)).statusCode).toBe(503);
    await ctx.sim('/__control/faults', { source: 'etax', mode: 'none' });
    const retry = await pay({ invoiceId: idOf('ET-T-1') }, headers);
    expect(retry.statusCode).toBe(201);
    const payments = await ctx.deps.db.selectFrom('payments').select(['id', 'status']).where('invoice_id', '=', idOf('ET-T-1')).where('status', '=', 'submitted').execute();
    expect(payments.map((p) => p.id)).toEqual([retry.json<Created>().id]);
    await cancel(retry.json<Created>().id);
  });
});

describe('reports', () => {
  it('lists payments newest first with refNum and source, paged', async () => {
    const p = await ctx.partner();
    for (const source of ['mof', 'etax', 'police', 'mof', 'etax', 'police'] as const) {
      expect((await pay({ invoiceId: (await ownInvoice(source, {}, p.apiKey)).id }, {}, p.apiKey)).statusCode).toBe(201);
    }
    const key = p.apiKey;
    const res = await ctx.api(key, { method: 'GET', url: '/api/v1/reports/payments?limit=2' });
    expect(res.statusCode).toBe(200);
    const body = res.json<{ items: { createdAt: string; refNum: string; source: string; partnerId: string }[]; total: number; page: number; limit: number }>();
    expect(body.page).toBe(1);
    expect(body.limit).toBe(2);
    expect(body.items).toHaveLength(2);
    expect(body.total).toBeGreaterThan(5);
    expect(Date.parse(body.items[0]?.createdAt ?? '')).toBeGreaterThanOrEqual(Date.parse(body.items[1]?.createdAt ?? ''));
    expect(['mof', 'etax', 'police']).toContain(body.items[0]?.source);
    const page2 = (await ctx.api(key, { method: 'GET', url: '/api/v1/reports/payments?limit=2&page=2' })).json<{ items: { id: string }[] }>();
    expect(page2.items.length).toBe(2);
    const defaults = (await ctx.api(key, { method: 'GET', url: '/api/v1/reports/payments' })).json<{ page: number; limit: number }>();
    expect(defaults).toMatchObject({ page: 1, limit: 20 });
    expect((await ctx.api(key, { method: 'GET', url: '/api/v1/reports/payments?limit=101' })).statusCode).toBe(400);
    expect((await ctx.api(key, { method: 'GET', url: '/api/v1/reports/payments?page=0' })).statusCode).toBe(400);
  });

  it("summarises the partner's retrieved invoices", async () => {
    const p = await ctx.partner();
    await ctx.api(p.apiKey, { method: 'GET', url: `/api/v1/invoices?ttd=${REG}` });
    const res = await ctx.api(p.apiKey, { method: 'GET', url: '/api/v1/reports/summary' });
    const body = res.json<{ total: number; open: number; overdue: number; paid: number; totalAmountDue: number }>();
    expect(body.total).toBe(8);
    expect(body.overdue).toBe(1);
    expect(body.open + body.overdue + body.paid).toBeLessThanOrEqual(8);
    expect(typeof body.totalAmountDue).toBe('number');
  });

  it("returns the day's settlement restricted to the partner's own payments", async () => {
    const own = await ownInvoice('mof');
    const invoiceId = own.id;
    const created = (await pay({ invoiceId })).json<Created>();
    await approve(own.refNum);
    await getPayment(created.id);
    const financeDay = new Date(Date.now() + 8 * 3600_000).toISOString().slice(0, 10);
    const res = await ctx.api(key, { method: 'POST', url: '/api/v1/payments/report', payload: { financeDay } });
    expect(res.statusCode).toBe(200);
    const body = res.json<{ financeDay: string; success: boolean; entries: { refNum: string; amount: number; payerReg: string }[] }>();
    expect(body).toMatchObject({ financeDay, success: true });
    expect(body.entries.map((e) => e.refNum)).toContain(own.refNum);
    const other = await ctx.partner();
    const theirs = (await ctx.api(other.apiKey, { method: 'POST', url: '/api/v1/payments/report', payload: { financeDay } })).json<{ entries: unknown[] }>();
    expect(theirs.entries).toEqual([]);
    for (const bad of ['2025-02-30', '2025-1-01', 'yesterday', '']) {
      const r = await ctx.api(key, { method: 'POST', url: '/api/v1/payments/report', payload: { financeDay: bad } });
      expect(r.statusCode).toBe(400);
    }
  });
});
