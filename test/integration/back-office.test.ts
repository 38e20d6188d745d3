import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import type { Static } from 'typebox';
import { createTestContext, type TestContext } from '../helpers/test-context.js';
import { approve, cancelPayment, partnerWithInvoice, partnerWithPayment, pay } from '../helpers/api.js';
import { startReceiver, type WebhookReceiver } from '../helpers/webhook-receiver.js';
import { financeDayOf } from '../../src/domain/finance-day.js';
import type { AdminDeliveryListBody, AdminPaymentDetailBody, AdminPaymentListBody, AuditListBody } from '../../src/schemas/back-office.schema.js';

type PaymentList = Static<typeof AdminPaymentListBody>;
type PaymentDetail = Static<typeof AdminPaymentDetailBody>;
type DeliveryList = Static<typeof AdminDeliveryListBody>;
type AuditList = Static<typeof AuditListBody>;

const DORJ = { name: 'dorj', token: 'dorj-operator-token' };
let ctx: TestContext;
let receiver: WebhookReceiver;

beforeAll(async () => {
  [ctx, receiver] = await Promise.all([createTestContext({ config: { adminTokens: [DORJ] } }), startReceiver()]);
});
afterAll(async () => {
  await ctx?.close();
  await receiver?.close();
});

function admin(method: 'GET' | 'POST' | 'PATCH', url: string, payload?: object, token = ctx.config.adminToken) {
  return ctx.admin.inject({ method, url, payload, headers: { authorization: `Bearer ${token}` } });
}

async function getJson<T>(url: string): Promise<T> {
  const res = await admin('GET', url);
  expect(res.statusCode, res.body).toBe(200);
  return res.json<T>();
}

const timeline = async (id: string) => (await getJson<PaymentDetail>(`/admin/payments/${id}`)).timeline.map((t) => [t.from, t.to, t.event, t.cause]);

describe('operators and the audit log', () => {
  it('names the operator of every action, with the state before and after, and never a key', async () => {
    const created = await admin('POST', '/admin/partners', { name: 'Audit Bank' }, DORJ.token);
    expect(created.statusCode).toBe(201);
    const { id, apiKey } = created.json<{ id: string; apiKey: string }>();
    expect((await admin('PATCH', `/admin/partners/${id}`, { active: false, qrStandard: 'govstd' }, DORJ.token)).statusCode).toBe(200);
    expect((await admin('POST', `/admin/partners/${id}/keys`, undefined)).statusCode).toBe(201);

    const { items } = await getJson<AuditList>(`/admin/audit?targetId=${id}`);
    expect(items.map((e) => [e.operator, e.action, e.targetType, e.targetId])).toEqual([
      ['admin', 'partner.rotate_key', 'partner', id],
      ['dorj', 'partner.update', 'partner', id],
      ['dorj', 'partner.create', 'partner', id],
    ]);
    expect(items[1]?.before).toMatchObject({ active: true, qrStandard: 'qrpay' });
    expect(items[1]?.after).toMatchObject({ active: false, qrStandard: 'govstd' });
    expect(JSON.stringify(items)).not.toContain(apiKey);
    expect((await getJson<AuditList>('/admin/audit?operator=dorj&action=partner.create')).items.map((e) => e.targetId)).toContain(id);
  });

  it('refuses an unknown operator token', async () => {
    expect((await admin('GET', '/admin/audit', undefined, 'not-a-token')).statusCode).toBe(401);
    expect((await ctx.admin.inject({ method: 'GET', url: '/admin/payments' })).statusCode).toBe(401);
  });
});

describe('payment search and timeline', () => {
  it('finds a payment by id, partner, refNum, invoice and status', async () => {
    const { partner, invoice, payment } = await partnerWithPayment(ctx, 'mof');
    for (const query of [`paymentId=${payment.id}`, `partnerId=${partner.id}`, `refNum=${invoice.refNum}`, `invoiceId=${invoice.id}`, `partnerId=${partner.id}&status=submitted`]) {
      const { items } = await getJson<PaymentList>(`/admin/payments?${query}`);
      expect(items.map((p) => p.id), query).toEqual([payment.id]);
    }
    expect((await getJson<PaymentList>(`/admin/payments?partnerId=${partner.id}&status=confirmed`)).items).toEqual([]);
    const [row] = (await getJson<PaymentList>(`/admin/payments?paymentId=${payment.id}`)).items;
    expect(row).toMatchObject({ partnerId: partner.id, invoiceId: invoice.id, refNum: invoice.refNum, source: 'mof', amount: 10000, status: 'submitted' });
    const day = financeDayOf(new Date());
    const inDay = await getJson<PaymentList>(`/admin/payments?partnerId=${partner.id}&from=${day}&to=${day}`);
    expect(inDay.items.map((p) => p.id)).toEqual([payment.id]);
    expect((await getJson<PaymentList>(`/admin/payments?partnerId=${partner.id}&to=2020-01-01`)).items).toEqual([]);
    expect((await getJson<PaymentList>(`/admin/payments?partnerId=${partner.id}&from=${encodeURIComponent(new Date(Date.now() + 60_000).toISOString())}`)).items).toEqual([]);
    expect((await admin('GET', '/admin/payments?status=lost')).statusCode).toBe(400);
    expect((await admin('GET', '/admin/payments/00000000-0000-4000-8000-000000000000')).statusCode).toBe(404);
  });

  it('pages through many payments by keyset, newest first, without gaps or repeats', async () => {
    const partner = await ctx.partner();
    // 120 stored payments of one partner, a second apart.
    await sql`
      WITH inv AS (
        INSERT INTO invoices (source, ref_num, description, amount, billed_amount, status, payee_id, payee_name)
        SELECT 'mof', 'PAGE-' || ${partner.id}::text || '-' || g, 'x', 100, 100, 'paid', 'ORG-100', 'x' FROM generate_series(1, 120) g
        RETURNING id, ref_num
      )
      INSERT INTO payments (partner_id, invoice_id, source, amount, status, created_at, updated_at)
      SELECT ${partner.id}::uuid, id, 'mof', 100, 'failed', now() - (split_part(ref_num, '-', 7)::int || ' seconds')::interval, now() FROM inv`.execute(ctx.deps.db);
    const seen: string[] = [];
    let cursor: string | null = '';
    while (cursor !== null) {
      const page: PaymentList = await getJson<PaymentList>(`/admin/payments?partnerId=${partner.id}${cursor ? `&cursor=${cursor}` : ''}`);
      expect(page.items.length).toBeLessThanOrEqual(50);
      seen.push(...page.items.map((p) => p.createdAt + p.id));
      cursor = page.nextCursor;
    }
    expect(seen).toHaveLength(120);
    expect(new Set(seen).size).toBe(120);
    expect([...seen].sort().reverse()).toEqual(seen);
  });

  it('names the cause and the ministry answer of every state change', async () => {
    const confirmed = await partnerWithPayment(ctx, 'police');
    await approve(ctx, confirmed.invoice.refNum);
    await ctx.runJobs();
    expect(await timeline(confirmed.payment.id)).toEqual([
      [null, 'pending', 'created', 'partner_request'],
      ['pending', 'submitted', 'ministry_accepted', 'partner_request'],
      ['submitted', 'confirmed', 'ministry_approved', 'confirmation_job'],
    ]);
    expect((await cancelPayment(ctx, confirmed.partner.apiKey, confirmed.payment.id)).statusCode).toBe(200);
    expect((await timeline(confirmed.payment.id)).at(-1)).toEqual(['confirmed', 'canceled', 'partner_canceled', 'partner_request']);

    const refused = await partnerWithInvoice(ctx, 'etax', { rejectPayment: true });
    const res = await pay(ctx, refused.partner.apiKey, { invoiceId: refused.invoice.id });
    expect(res.statusCode).toBe(422);
    const [failed] = (await getJson<PaymentList>(`/admin/payments?invoiceId=${refused.invoice.id}`)).items;
    const detail = await getJson<PaymentDetail>(`/admin/payments/${failed?.id}`);
    expect(detail.timeline.at(-1)).toMatchObject({ from: 'pending', to: 'failed', event: 'ministry_refused', cause: 'partner_request', detail: { ministry: 'refused', reason: 'not accepted at this time' } });

    const expiring = await partnerWithPayment(ctx, 'mof');
    ctx.advance(ctx.config.paymentExpiryMs + 1);
    await ctx.runJobs();
    expect((await timeline(expiring.payment.id)).at(-1)).toEqual(['submitted', 'canceled', 'expired', 'expiry']);
  });
});

describe('webhook deliveries across partners', () => {
  it('lists a partner delivery and queues it again on request, in the audit log', async () => {
    const { partner, invoice, payment } = await partnerWithPayment(ctx, 'mof');
    const hook = await ctx.api(partner.apiKey, { method: 'POST', url: '/api/v1/webhooks', payload: { url: receiver.url, secret: 'back-office-test-secret-0123456789', events: ['payment.confirmed'] } });
    expect(hook.statusCode, hook.body).toBe(201);
    await approve(ctx, invoice.refNum);
    await ctx.runJobs();
    const before = receiver.received.filter((r) => r.body.includes(payment.id)).length;
    expect(before).toBe(1);

    const { items } = await getJson<DeliveryList>(`/admin/deliveries?partnerId=${partner.id}`);
    expect(items).toHaveLength(1);
    const [delivery] = items;
    expect(delivery).toMatchObject({ partnerId: partner.id, url: receiver.url, event: 'payment.confirmed', status: 'succeeded', attempts: 1, lastStatusCode: 200, lastError: null });
    expect((await getJson<DeliveryList>(`/admin/deliveries?partnerId=${partner.id}&status=failed`)).items).toEqual([]);
    // The partner's delivery log and the operator's say it with one word.
    expect((await getJson<DeliveryList>(`/admin/deliveries?partnerId=${partner.id}&status=succeeded`)).items.map((d) => d.id)).toEqual([delivery?.id]);
    const partnerLog = await ctx.api(partner.apiKey, { method: 'GET', url: `/api/v1/webhooks/${hook.json<{ id: string }>().id}/deliveries` });
    expect(partnerLog.json<{ items: { status: string }[] }>().items.map((e) => e.status)).toEqual(['succeeded']);
    expect((await admin('GET', `/admin/deliveries?status=delivered`)).statusCode).toBe(400);
    expect((await ctx.admin.inject({ method: 'GET', url: '/metrics' })).body).toMatch(/^webhook_deliveries_total\{outcome="succeeded"\} [1-9]/m);

    const again = await admin('POST', `/admin/deliveries/${delivery?.id}/redeliver`, undefined, DORJ.token);
    expect(again.statusCode, again.body).toBe(200);
    expect(again.json()).toMatchObject({ id: delivery?.id, status: 'pending' });
    await ctx.runJobs();
    expect(receiver.received.filter((r) => r.body.includes(payment.id))).toHaveLength(2);
    expect((await getJson<DeliveryList>(`/admin/deliveries?partnerId=${partner.id}`)).items[0]).toMatchObject({ status: 'succeeded', attempts: 2 });
    const audit = await getJson<AuditList>(`/admin/audit?targetId=${delivery?.id}`);
    expect(audit.items.map((e) => [e.operator, e.action, e.before, e.after])).toEqual([
      ['dorj', 'delivery.redeliver', { status: 'succeeded', attempts: 1 }, { status: 'pending', attempts: 1 }],
    ]);

    expect((await admin('POST', '/admin/deliveries/00000000-0000-4000-8000-000000000000/redeliver')).statusCode).toBe(404);
    const webhookId = hook.json<{ id: string }>().id;
    expect((await ctx.api(partner.apiKey, { method: 'DELETE', url: `/api/v1/webhooks/${webhookId}` })).statusCode).toBe(200);
    expect((await admin('POST', `/admin/deliveries/${delivery?.id}/redeliver`)).statusCode).toBe(409);
  });
});

describe("one partner's deliveries over its webhooks", () => {
  it('pages them newest first across every webhook of the partner, and never another partner\'s', async () => {
    const db = ctx.deps.db;
    const [mine, theirs] = [await ctx.partner(), await ctx.partner()];
    const hooks = async (partnerId: string, n: number) =>
      (
        await sql<{ id: string }>`INSERT INTO webhooks (partner_id, url, events, secret_ciphertext)
          SELECT ${partnerId}::uuid, 'https://hooks.example.com/' || g, '["payment.confirmed"]', 'x' FROM generate_series(1, ${n}) g RETURNING id`.execute(db)
      ).rows.map((r) => r.id);
    const [a, b, c] = await hooks(mine.id, 3);
    const [other] = await hooks(theirs.id, 1);
    // 130 of mine over the last hours, spread over the three webhooks unevenly, and the other partner's between them.
    const { rows: made } = await sql<{ id: string; webhook_id: string; created_at: Date }>`
      WITH e AS (
        INSERT INTO events (partner_id, event, payload, created_at)
        SELECT CASE WHEN g % 4 = 0 THEN ${theirs.id}::uuid ELSE ${mine.id}::uuid END, 'payment.confirmed', '{}', now() - g * interval '1 minute'
        FROM generate_series(1, 173) g RETURNING id, partner_id, created_at
      )
      INSERT INTO webhook_deliveries (webhook_id, event_id, status, attempts, next_attempt_at, created_at)
      SELECT CASE WHEN e.partner_id = ${theirs.id}::uuid THEN ${other}::uuid
                  WHEN extract(minute FROM e.created_at)::int % 5 = 0 THEN ${c}::uuid
                  WHEN extract(minute FROM e.created_at)::int % 2 = 0 THEN ${b}::uuid ELSE ${a}::uuid END,
             e.id, 'delivered', 1, now(), e.created_at FROM e
      RETURNING id, webhook_id, created_at`.execute(db);
    const expected = made
      .filter((d) => d.webhook_id !== other)
      .sort((x, y) => y.created_at.getTime() - x.created_at.getTime() || (x.id < y.id ? 1 : -1))
      .map((d) => d.id);
    expect(expected.length).toBeGreaterThan(100);
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const listed: DeliveryList = await getJson<DeliveryList>(`/admin/deliveries?partnerId=${mine.id}${cursor ? `&cursor=${cursor}` : ''}`);
      expect(listed.items.every((d) => d.partnerId === mine.id)).toBe(true);
      seen.push(...listed.items.map((d) => d.id));
      cursor = listed.nextCursor;
    } while (cursor && seen.length < 1000);
    expect(seen).toEqual(expected);
    expect(new Set((await getJson<DeliveryList>(`/admin/deliveries?partnerId=${mine.id}`)).items.map((d) => d.webhookId))).toEqual(new Set([a, b, c]));
  });
});

describe('malformed cursors', () => {
  const BAD = ['x', 'AAAA', '1;DROP TABLE payments', '00000000-0000-4000-8000-00000000000g', 'urn:uuid:00000000-0000-4000-8000-000000000000', '-1', '1e3', '9'.repeat(19)];

  it.each(['/admin/payments', '/admin/deliveries', '/admin/audit', '/admin/reconciliations', '/admin/discrepancies'])('%s answers 400 for a malformed cursor', async (path) => {
    for (const cursor of BAD) {
      const res = await admin('GET', `${path}?cursor=${encodeURIComponent(cursor)}`);
      expect(res.statusCode, `${path} ${cursor}: ${res.body}`).toBe(400);
      expect(res.json()).toEqual({
        statusCode: 400,
        message: [expect.any(String)],
        error: 'Bad Request',
        code: 'invalid_request',
        requestId: res.headers['x-request-id'],
        errors: [{ path: '/cursor', message: res.json<{ message: string[] }>().message[0] }],
      });
    }
  });

  it('says what a cursor must be, and takes a well-formed one that names no row', async () => {
    const res = await admin('GET', '/admin/payments?cursor=x');
    expect(res.json<{ message: string[] }>().message).toEqual(['cursor must be the nextCursor of a previous page']);
    expect((await getJson<PaymentList>('/admin/payments?cursor=00000000-0000-4000-8000-000000000000')).items).toEqual([]);
    expect((await getJson<DeliveryList>('/admin/deliveries?cursor=00000000-0000-4000-8000-000000000000')).items).toEqual([]);
    expect((await getJson<AuditList>('/admin/audit?cursor=0')).items).toEqual([]);
  });

  it('is a 400 on the partner lists too, which page by number, not by cursor', async () => {
    const { apiKey } = await ctx.partner();
    const hook = await ctx.api(apiKey, {
      method: 'POST',
      url: '/api/v1/webhooks',
      payload: { url: `${receiver.url}`, secret: 'whsec_0123456789abcdef', events: ['payment.submitted'] },
    });
    expect(hook.statusCode).toBe(201);
    for (const url of ['/api/v1/reports/payments?cursor=x', `/api/v1/webhooks/${hook.json<{ id: string }>().id}/deliveries?cursor=AAAA`]) {
      const res = await ctx.api(apiKey, { method: 'GET', url });
      expect(res.statusCode, url).toBe(400);
      expect(res.json()).toMatchObject({ statusCode: 400, error: 'Bad Request' });
    }
  });
});
