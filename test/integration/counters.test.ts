import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestContext, type TestContext } from '../helpers/test-context.js';
import { addOwnInvoice } from '../helpers/own-invoice.js';
import { checkInvariants, kyselyRunner } from '../helpers/invariants.js';
import { createCounterRepository } from '../../src/db/repositories/counter.repository.js';
import type { InvoiceFixture } from '../../simulator/fixtures.schema.js';

/*
 * The reports read counters kept by triggers (migration 007). Random partner and ministry
 * operations, then every counter is compared with a recount of its rows, and every answer of
 * the summary and of the payment list with the query it replaced (a scan of the rows).
 */

const DAY = 24 * 3600 * 1000;
const SOURCES = ['mof', 'etax', 'police'] as const;

let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext({ config: { rateLimit: { perSecond: 10_000, perMinute: 100_000, perHour: 1_000_000 } } });
});
afterAll(() => ctx.close());

/** A small seeded generator, so a failing sequence can be replayed from its seed. */
function generator(seed: number) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return { next, int: (n: number) => Math.floor(next() * n), pick: <T>(xs: readonly T[]): T => xs[Math.floor(next() * xs.length)] as T };
}

interface Summary {
  total: number;
  open: number;
  overdue: number;
  paid: number;
  totalAmountDue: number;
}

/** The summary as the rows say it, at the service clock's now: the scan the counters replaced. */
async function recountSummary(partnerId: string): Promise<Summary> {
  const now = ctx.now();
  const { rows } = await sql<{ total: number; open: number; overdue: number; paid: number; due: string }>`
    SELECT count(*)::int AS total,
      (count(*) FILTER (WHERE i.status = 'open' AND NOT (i.due_date IS NOT NULL AND i.due_date < ${now})))::int AS open,
      (count(*) FILTER (WHERE i.status = 'open' AND i.due_date IS NOT NULL AND i.due_date < ${now}))::int AS overdue,
      (count(*) FILTER (WHERE i.status = 'paid'))::int AS paid,
      coalesce(sum(i.amount) FILTER (WHERE i.status = 'open'), 0)::text AS due
    FROM partner_invoices pi JOIN invoices i ON i.id = pi.invoice_id
    WHERE pi.partner_id = ${partnerId}`.execute(ctx.deps.db);
  const r = rows[0];
  if (!r) throw new Error('no recount row');
  return { total: r.total, open: r.open, overdue: r.overdue, paid: r.paid, totalAmountDue: Number(r.due) };
}

/** The partner's payment ids newest first, by the OFFSET scan the day seek replaced. */
async function scannedPage(partnerId: string, page: number, limit: number): Promise<string[]> {
  const { rows } = await sql<{ id: string }>`
    SELECT id FROM payments WHERE partner_id = ${partnerId}
    ORDER BY created_at DESC, id DESC LIMIT ${limit} OFFSET ${(page - 1) * limit}`.execute(ctx.deps.db);
  return rows.map((r) => r.id);
}

async function expectReportsMatchRows(partners: { id: string; apiKey: string }[]) {
  expect(await checkInvariants(kyselyRunner(ctx.deps.db))).toEqual([]);
  for (const p of partners) {
    const summary = (await ctx.api(p.apiKey, { method: 'GET', url: '/api/v1/reports/summary' })).json<Summary>();
    expect(summary).toEqual(await recountSummary(p.id));
    const limit = 3;
    const first = (await ctx.api(p.apiKey, { method: 'GET', url: `/api/v1/reports/payments?limit=${limit}` })).json<{ total: number; items: { id: string }[] }>();
    const pages = Math.ceil(first.total / limit) + 1;
    for (let page = 1; page <= pages; page++) {
      const body = (await ctx.api(p.apiKey, { method: 'GET', url: `/api/v1/reports/payments?page=${page}&limit=${limit}` })).json<{ total: number; items: { id: string }[] }>();
      expect(body.items.map((i) => i.id), `page ${page}`).toEqual(await scannedPage(p.id, page, limit));
    }
  }
}

describe('report counters', () => {
  it('stay equal to a recount of the rows through random payments, cancels, ministry changes and days passing', async () => {
    const rand = generator(17);
    const counters = createCounterRepository(ctx.deps.db);
    const partners = await Promise.all([ctx.partner(), ctx.partner(), ctx.partner()]);
    const now = ctx.now().getTime();
    const fixtures: InvoiceFixture[] = [];
    for (let i = 0; i < 14; i++) {
      const due = rand.pick([null, now - 3 * DAY, now + DAY / 2, now + 2 * DAY, now + 30 * DAY]);
      fixtures.push(
        await addOwnInvoice(ctx, SOURCES[i % 3] ?? 'mof', { amount: 1000 + rand.int(90) * 100, dueDate: due === null ? null : new Date(due).toISOString() }),
      );
    }
    /** Service invoice id by partner and refNum, once the partner has retrieved it. */
    const seen = new Map<string, string>();
    const payments: { id: string; refNum: string; apiKey: string }[] = [];

    const ops = {
      async retrieve() {
        const p = rand.pick(partners);
        const f = rand.pick(fixtures);
        const res = await ctx.api(p.apiKey, { method: 'GET', url: `/api/v1/invoices/ref/${f.refNum}` });
        if (res.statusCode === 200) seen.set(`${p.id}:${f.refNum}`, res.json<{ id: string }>().id);
      },
      async pay() {
        const p = rand.pick(partners);
        const f = rand.pick(fixtures);
        const invoiceId = seen.get(`${p.id}:${f.refNum}`);
        if (!invoiceId) return;
        const res = await ctx.api(p.apiKey, { method: 'POST', url: '/api/v1/payments', payload: { invoiceId } });
        if (res.statusCode === 201) payments.push({ id: res.json<{ id: string }>().id, refNum: f.refNum, apiKey: p.apiKey });
      },
      async approve() {
        const payment = payments.length > 0 ? rand.pick(payments) : undefined;
        if (!payment) return;
        await ctx.sim('/__control/approve', { refNum: payment.refNum });
        await ctx.runJobs();
      },
      async cancel() {
        const payment = payments.length > 0 ? rand.pick(payments) : undefined;
        if (payment) await ctx.api(payment.apiKey, { method: 'DELETE', url: `/api/v1/payments/${payment.id}` });
      },
      async ministryChange() {
        const f = rand.pick(fixtures);
        f.amount = 1000 + rand.int(90) * 100;
        f.dueDate = rand.next() < 0.3 ? null : new Date(ctx.now().getTime() + (rand.int(6) - 3) * DAY).toISOString();
        await ctx.sim('/__control/invoices', { invoices: [f] });
        const p = rand.pick(partners);
        const invoiceId = seen.get(`${p.id}:${f.refNum}`);
        if (invoiceId) await ctx.api(p.apiKey, { method: 'GET', url: `/api/v1/invoices/${invoiceId}/refresh` });
      },
      async rollup() {
        await counters.rollup(1 + rand.int(20));
      },
      async dayPasses() {
        ctx.advance(DAY);
      },
    };
    const weighted: (keyof typeof ops)[] = ['retrieve', 'retrieve', 'retrieve', 'pay', 'pay', 'pay', 'approve', 'approve', 'cancel', 'ministryChange', 'ministryChange', 'rollup', 'dayPasses'];

    for (let step = 1; step <= 160; step++) {
      await ops[rand.pick(weighted)]();
      if (step % 40 === 0) await expectReportsMatchRows(partners);
    }
    // The operations must have exercised what the counters track, or the comparison proves little;
    // counted over this test's own partners and invoices only, whatever else the database holds.
    const db = ctx.deps.db;
    const partnerIds = partners.map((p) => p.id);
    const paid = await db.selectFrom('invoices').select('id').where('status', '=', 'paid').where('ref_num', 'in', fixtures.map((f) => f.refNum)).execute();
    const linked = await db.selectFrom('partner_invoices').select('invoice_id').where('partner_id', 'in', partnerIds).execute();
    const statuses = await db.selectFrom('payments').select('status').distinct().where('partner_id', 'in', partnerIds).execute();
    expect(paid.length).toBeGreaterThan(0);
    expect(linked.length).toBeGreaterThan(10);
    expect(statuses.length).toBeGreaterThanOrEqual(3);

    while ((await counters.rollup(1000)) > 0);
    const { rows: left } = await sql<{ n: number }>`SELECT count(*)::int AS n FROM counter_deltas`.execute(ctx.deps.db);
    expect(left[0]?.n).toBe(0);
    await expectReportsMatchRows(partners);
  });

  it('count one statement that refreshes many invoices, changed and unchanged alike, for every partner holding them', async () => {
    const register = '7700123';
    const fixtures: InvoiceFixture[] = Array.from({ length: 60 }, (_, i) => ({
      source: 'etax',
      refNum: `BULK-ET-${i}`,
      description: 'bulk refresh',
      amount: 1000 + i,
      status: 'open',
      dueDate: '2099-01-01T00:00:00.000Z',
      issuedAt: null,
      payer: { register, name: 'Bulk' },
      payee: { id: 'ORG-1', name: 'Org' },
    }));
    await ctx.sim('/__control/invoices', { invoices: fixtures });
    const partners = [await ctx.partner(), await ctx.partner()];
    const search = async (p: { apiKey: string }) => {
      const res = await ctx.api(p.apiKey, { method: 'GET', url: `/api/v1/invoices?ttd=${register}` });
      expect(res.json<{ invoices: unknown[] }>().invoices).toHaveLength(60);
    };
    for (const p of partners) await search(p);
    // A quarter each: a new amount, a due date now past (another bucket), paid at the ministry, and as they were.
    const changed = fixtures.map((f, i): InvoiceFixture => {
      if (i % 4 === 0) return { ...f, amount: f.amount + 500 };
      if (i % 4 === 1) return { ...f, dueDate: '2020-01-01T00:00:00.000Z' };
      if (i % 4 === 2) return { ...f, status: 'paid' };
      return f;
    });
    await ctx.sim('/__control/invoices', { invoices: changed });
    await search(partners[0] as { apiKey: string });
    expect(await checkInvariants(kyselyRunner(ctx.deps.db))).toEqual([]);
    for (const p of partners) {
      const summary = (await ctx.api(p.apiKey, { method: 'GET', url: '/api/v1/reports/summary' })).json<Summary>();
      expect(summary).toEqual(await recountSummary(p.id));
      expect(summary).toMatchObject({ total: 60, open: 30, overdue: 15, paid: 15 });
    }
  });

  it('count a link and a concurrent change of the same invoice exactly once', async () => {
    const partners = await Promise.all(Array.from({ length: 6 }, () => ctx.partner()));
    const f = await addOwnInvoice(ctx, 'etax', { amount: 5000 });
    const [first] = partners;
    if (!first) throw new Error('no partner');
    const id = (await ctx.api(first.apiKey, { method: 'GET', url: `/api/v1/invoices/ref/${f.refNum}` })).json<{ id: string }>().id;
    f.amount = 7000;
    f.dueDate = '2020-01-01T00:00:00.000Z';
    await ctx.sim('/__control/invoices', { invoices: [f] });
    await Promise.all([
      ...partners.slice(1).map((p) => ctx.api(p.apiKey, { method: 'GET', url: `/api/v1/invoices/ref/${f.refNum}` })),
      ctx.api(first.apiKey, { method: 'GET', url: `/api/v1/invoices/${id}/refresh` }),
    ]);
    expect(await checkInvariants(kyselyRunner(ctx.deps.db))).toEqual([]);
    for (const p of partners) {
      const summary = (await ctx.api(p.apiKey, { method: 'GET', url: '/api/v1/reports/summary' })).json<Summary>();
      expect(summary).toEqual({ total: 1, open: 0, overdue: 1, paid: 0, totalAmountDue: 7000 });
    }
  });
});
