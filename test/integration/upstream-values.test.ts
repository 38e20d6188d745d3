import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { InvoiceFixture } from '../../simulator/fixtures.schema.js';
import { createMinistryAdapters, type ClosableMinistryAdapters } from '../../src/adapters/ministry/ministry.factory.js';
import { UpstreamError, type MinistryAdapter, type MinistryAdapters, type UpstreamInvoice } from '../../src/domain/ministry.port.js';
import { createInvoiceRepository } from '../../src/db/repositories/invoice.repository.js';
import { UpstreamUnavailableError } from '../../src/domain/errors.js';
import type { Source } from '../../src/domain/vocabulary.js';
import { createInvoiceService } from '../../src/services/invoice.service.js';
import { createTestContext, type TestContext } from '../helpers/test-context.js';
import { addOwnInvoice, unique } from '../helpers/own-invoice.js';

/*
 * Issue 60: a value one ministry system sends that the service cannot store (an amount past
 * numeric(16,2), a time PostgreSQL has not or cannot keep, a key past what its index holds) is that
 * system's malformed answer. The search answers with the other systems' invoices, as it does for a
 * body that is not JSON, instead of a 500 that loses them all.
 */

let ctx: TestContext;
let key: string;
let partnerId: string;

beforeAll(async () => {
  ctx = await createTestContext();
  ({ id: partnerId, apiKey: key } = await ctx.partner());
});
afterAll(() => ctx.close());

interface Listed {
  id: string;
  description: string;
  amount: number;
  dueDate: string | null;
  issuedAt: string | null;
  vehicleNo: string | null;
}

const search = (ttd: string) => ctx.api(key, { method: 'GET', url: `/api/v1/invoices?ttd=${encodeURIComponent(ttd)}` });

async function malformedAnswers(source: Source, operation: string): Promise<number> {
  const text = await ctx.deps.metrics.registry.getSingleMetricAsString('ministry_call_errors_total');
  const line = text.split('\n').find((l) => l.startsWith(`ministry_call_errors_total{source="${source}",operation="${operation}",kind="malformed"}`));
  return line ? Number(line.split(' ').pop()) : 0;
}

const AMOUNT: Record<Source, number> = { mof: 1000, etax: 2500.5, police: 700 };

/** One taxpayer's invoice at every system, the one at `badAt` carrying `bad` (the unstorable value). */
async function taxpayerWith(badAt: Source, bad: Partial<InvoiceFixture>) {
  const payer = { register: unique('R'), name: 'Тест ХХК' };
  const planted = [];
  for (const source of ['mof', 'etax', 'police'] as const) {
    // The answer names no source or reference: each invoice's own description tells them apart.
    const extra = source === badAt ? bad : {};
    planted.push(await addOwnInvoice(ctx, source, { payer, description: unique(source), amount: AMOUNT[source], ...extra }));
  }
  return { register: payer.register, bad: planted.find((i) => i.source === badAt) as InvoiceFixture, good: planted.filter((i) => i.source !== badAt) };
}

/** Text nothing compresses: past what one btree index entry holds (2704 bytes) even as stored. */
const incompressible = (bytes: number) => randomBytes(bytes).toString('base64');

const MOF_KINDS: [kind: string, bad: Partial<InvoiceFixture>][] = [
  ['an amount past numeric(16,2)', { wire: { totalAmount: 100000000000000 } }],
  ['an amount with more than 2 decimals', { wire: { totalAmount: 12.345 } }],
  ['a due date in year 0, which PostgreSQL has not', { dueDate: '0000-06-01T00:00:00.000Z' }],
  ['an issue time past year 9999 in UTC', { wire: { createdAt: '9999-12-31T23:59:59-01:00' } }],
  ['an issue time in year 1, which the embedded database reads back as 2001', { issuedAt: '0001-01-01T00:00:00.000Z' }],
  ['a vehicle plate past what its index holds', { vehicleNo: incompressible(6000) }],
  ['a reference past what its index holds', { refNum: incompressible(6000) }],
];

const OTHER_KINDS: [kind: string, source: Source, bad: Partial<InvoiceFixture>][] = [
  ['an etax amount past numeric(16,2)', 'etax', { wire: { bill_amount: '123456789012345.00' } }],
  ['an etax due time before year 100', 'etax', { wire: { due_date: '0001-01-01 00:00:00' } }],
  ['a police due time past year 9999', 'police', { dueDate: '+100000-01-01T00:00:00.000Z' }],
  ['a police tax reference past what its index holds', 'police', { taxRef: incompressible(6000) }],
];

describe('an unstorable value from one system', () => {
  async function expectSkipped(badAt: Source, bad: Partial<InvoiceFixture>) {
    const { register, good } = await taxpayerWith(badAt, bad);
    const before = await malformedAnswers(badAt, 'search');
    const res = await search(register);
    expect(res.statusCode, res.body).toBe(200);
    const listed = res.json<{ invoices: Listed[]; total: number }>();
    expect(listed.invoices.map((i) => i.description).sort()).toEqual(good.map((i) => i.description).sort());
    expect(listed.total).toBe(good.reduce((sum, i) => sum + i.amount, 0));
    expect(await malformedAnswers(badAt, 'search')).toBe(before + 1);
  }

  it.each(MOF_KINDS)('%s: mof is skipped as malformed, the etax and police invoices are answered', async (_kind, bad) => {
    await expectSkipped('mof', bad);
  });

  it.each(OTHER_KINDS)('%s: that system is skipped, the other two answered', async (_kind, source, bad) => {
    await expectSkipped(source, bad);
  });

  it('leaves a concurrent search of another taxpayer alone', async () => {
    const { register, good } = await taxpayerWith('mof', { wire: { totalAmount: 100000000000000 } });
    const other = { register: unique('R'), name: 'Бусад ХХК' };
    const mofOfOther = await addOwnInvoice(ctx, 'mof', { payer: other, description: unique('mof'), amount: 123.45 });
    const [bad, fine] = await Promise.all([search(register), search(other.register)]);
    expect(bad.statusCode, bad.body).toBe(200);
    expect(bad.json<{ invoices: Listed[] }>().invoices).toHaveLength(good.length);
    expect(fine.statusCode, fine.body).toBe(200);
    expect(fine.json<{ invoices: Listed[] }>().invoices.map((i) => i.description)).toEqual([mofOfOther.description]);
  });

  it('stores the largest amount and the widest times that do fit', async () => {
    const payer = { register: unique('R'), name: 'Тест ХХК' };
    const mof = await addOwnInvoice(ctx, 'mof', {
      payer,
      description: unique('mof'),
      dueDate: '9999-12-31T23:59:59.999Z',
      issuedAt: '0100-01-01T00:00:00.000Z',
      vehicleNo: 'Ё'.repeat(512),
      wire: { totalAmount: 99999999999999.98 },
    });
    const res = await search(payer.register);
    expect(res.statusCode, res.body).toBe(200);
    const [listed] = res.json<{ invoices: Listed[] }>().invoices;
    expect(listed).toMatchObject({
      description: mof.description,
      amount: 99999999999999.98,
      dueDate: '9999-12-31T23:59:59.999Z',
      issuedAt: '0100-01-01T00:00:00.000Z',
      vehicleNo: 'Ё'.repeat(512),
    });
  });

  it('a lookup by reference of the unstorable invoice is a failure of mof (503), not a 500', async () => {
    const { bad } = await taxpayerWith('mof', { wire: { totalAmount: 100000000000000 } });
    const before = await malformedAnswers('mof', 'getByRef');
    const res = await ctx.api(key, { method: 'GET', url: `/api/v1/invoices/ref/${encodeURIComponent(bad.refNum)}` });
    expect(res.statusCode, res.body).toBe(503);
    expect(await malformedAnswers('mof', 'getByRef')).toBe(before + 1);
  });

  it('a refresh that reads an unstorable value is a failure of mof (503) and keeps the stored copy', async () => {
    const payer = { register: unique('R'), name: 'Тест ХХК' };
    const mof = await addOwnInvoice(ctx, 'mof', { payer, amount: 10 });
    const [stored] = (await search(payer.register)).json<{ invoices: Listed[] }>().invoices;
    if (!stored) throw new Error('the invoice was not found');
    await addOwnInvoice(ctx, 'mof', { ...mof, wire: { totalAmount: 100000000000000 } });
    const res = await ctx.api(key, { method: 'GET', url: `/api/v1/invoices/${stored.id}/refresh` });
    expect(res.statusCode, res.body).toBe(503);
    const again = await ctx.api(key, { method: 'GET', url: `/api/v1/invoices/${stored.id}` });
    expect(again.json<Listed>().amount).toBe(10);
  });
});

describe('unstorable values in payment status and settlement answers', () => {
  let server: Server;
  let adapters: ClosableMinistryAdapters;
  /** The body each path answers with. */
  const bodies = new Map<string, unknown>();

  beforeAll(async () => {
    server = createServer((request, response) => {
      const path = (request.url ?? '').split('?')[0] ?? '';
      response.setHeader('content-type', 'application/json');
      response.end(JSON.stringify(bodies.get(path) ?? {}));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    adapters = createMinistryAdapters({ urls: { mof: url, etax: url, police: url }, timeoutMs: 2000 });
  });
  afterAll(async () => {
    await adapters?.close();
    await new Promise((resolve) => server?.close(resolve));
  });

  async function malformed(promise: Promise<unknown>): Promise<string> {
    const error = await promise.then(() => null, (reason: unknown) => reason);
    expect(error).toBeInstanceOf(UpstreamError);
    expect((error as UpstreamError).kind).toBe('malformed');
    return (error as UpstreamError).message;
  }

  const mofRow = { paymentId: 'p-1', invoiceNo: 'MOF-1', amount: 100, payerRegNo: null, payerName: null, title: 't', settledAt: '2025-11-01T01:00:00Z' };
  const etaxItem = { payment_id: 'p-1', bill_no: 'ET-1', paid_amount: '100.00', taxpayer_tin: null, taxpayer_name: null, bill_desc: 't', paid_at: '2025-11-01 09:00:00' };
  const policeEntry = { PAYMENT_ID: 'p-1', FINE_NO: 'P-1', PAY_AMOUNT: 10000, OFFENDER_REG: null, OFFENDER_NAME: null, FINE_DESC: 't', CONFIRMED_AT: 1761958800000 };

  it('a settlement amount past numeric(16,2) fails that source (the reconciliation records it as failed)', async () => {
    bodies.set('/mof/api/settlements/2025-11-01', { data: [mofRow, { ...mofRow, paymentId: 'p-2', amount: 100000000000000 }] });
    bodies.set('/etax/v2/settlement', { result: { items: [etaxItem, { ...etaxItem, paid_amount: '100000000000000.00' }] } });
    expect(await malformed(adapters.mof.settlement('2025-11-01'))).toMatch(/whole digits/);
    expect(await malformed(adapters.etax.settlement('2025-11-01'))).toMatch(/whole digits/);
  });

  it('a settlement time or payment id the service cannot store fails that source', async () => {
    bodies.set('/police/api/settlement/20251101', { RESULT_CODE: 0, ENTRIES: [{ ...policeEntry, CONFIRMED_AT: 8.64e15 }] });
    expect(await malformed(adapters.police.settlement('2025-11-01'))).toMatch(/years 100-9999/);
    bodies.set('/mof/api/settlements/2025-11-02', { data: [{ ...mofRow, paymentId: incompressible(3000) }] });
    expect(await malformed(adapters.mof.settlement('2025-11-02'))).toMatch(/key of/);
  });

  it('a confirmation time the service cannot store makes the status check fail', async () => {
    bodies.set('/mof/api/payments/p-1', { data: { paymentId: 'p-1', state: 'APPROVED', approvedAt: '0000-01-01T00:00:00Z' } });
    bodies.set('/etax/v2/payments/p-1', { result: { payment: { payment_id: 'p-1', status_code: 20, confirmed_at: '0050-01-01 00:00:00' } } });
    bodies.set('/police/api/payments/p-1', { RESULT_CODE: 0, PAYMENT: { PAYMENT_ID: 'p-1', PAY_STATUS: 'DONE', CONFIRMED_AT: -8.64e15 } });
    for (const source of ['mof', 'etax', 'police'] as const) {
      expect(await malformed(adapters[source].getPayment({ paymentId: 'p-1', refNum: 'x' }))).toMatch(/years 100-9999/);
    }
  });
});

/**
 * The service's own defence, for a value an adapter let through: the database refuses it, and
 * only the system that sent it fails. Adapters here hand the service what no real adapter would.
 */
describe('a value the database refuses despite the adapters', () => {
  const invoiceOf = (source: Source, register: string, extra: Partial<UpstreamInvoice> = {}): UpstreamInvoice => ({
    source,
    refNum: unique(source),
    description: `${source} invoice`,
    amount: '100',
    status: 'open',
    dueDate: null,
    issuedAt: '2025-01-01T00:00:00.000Z',
    vehicleNo: null,
    taxRef: null,
    payer: { register, name: 'Тест' },
    payee: { id: 'ORG', name: 'Org' },
    year: null,
    ...extra,
  });

  function serviceAnswering(answers: Record<Source, UpstreamInvoice[]>) {
    const repo = createInvoiceRepository(ctx.deps.db, ctx.now);
    const upserts: number[] = [];
    const reported: string[] = [];
    const warnings: object[] = [];
    const adapter = (source: Source): MinistryAdapter => ({
      source,
      search: async () => answers[source],
      getByRef: async (refNum) => answers[source].find((i) => i.refNum === refNum) ?? null,
      submitPayment: () => Promise.reject(new Error('not used')),
      getPayment: () => Promise.reject(new Error('not used')),
      cancelPayment: () => Promise.reject(new Error('not used')),
      settlement: () => Promise.reject(new Error('not used')),
    });
    const ministries: MinistryAdapters = { mof: adapter('mof'), etax: adapter('etax'), police: adapter('police') };
    const service = createInvoiceService({
      invoices: {
        ...repo,
        upsert(invoices, uow) {
          upserts.push(invoices.length);
          return repo.upsert(invoices, uow);
        },
      },
      ministries,
      log: { info: () => undefined, error: () => undefined, warn: (obj) => warnings.push(obj) },
      onUnstorable: (source, operation) => reported.push(`${source} ${operation}`),
      now: ctx.now,
    });
    return { service, upserts, reported, warnings };
  }

  const REFUSED: [kind: string, extra: Partial<UpstreamInvoice>][] = [
    ['an amount past numeric(16,2) (22003)', { amount: '100000000000000' }],
    ['a time in year 0 (22008)', { dueDate: '0000-01-01T00:00:00Z' }],
    ['a key past its index entry (54000)', { vehicleNo: incompressible(6000) }],
    ['a negative amount (the check constraint)', { amount: '-5' }],
  ];

  it.each(REFUSED)('%s: the other systems are stored and answered, the one that sent it counted as malformed', async (_kind, extra) => {
    const register = unique('R');
    const answers = { mof: [invoiceOf('mof', register, extra)], etax: [invoiceOf('etax', register)], police: [invoiceOf('police', register)] };
    const { service, upserts, reported, warnings } = serviceAnswering(answers);
    const listed = await service.search(partnerId, { kind: 'ttd', value: register });
    expect(listed.invoices.map((i) => i.description).sort()).toEqual(['etax invoice', 'police invoice']);
    expect(reported).toEqual(['mof search']);
    expect(warnings).toContainEqual(expect.objectContaining({ source: 'mof', err: expect.objectContaining({ kind: 'malformed' }) }));
    // The one statement first, then each system's own.
    expect(upserts).toEqual([3, 1, 1, 1]);
  });

  it('keeps the one statement when every value is storable', async () => {
    const register = unique('R');
    const { service, upserts, reported } = serviceAnswering({ mof: [invoiceOf('mof', register)], etax: [invoiceOf('etax', register)], police: [] });
    expect((await service.search(partnerId, { kind: 'ttd', value: register })).invoices).toHaveLength(2);
    expect(upserts).toEqual([2]);
    expect(reported).toEqual([]);
  });

  it('answers a lookup by reference of it as a failure of that system', async () => {
    const bad = invoiceOf('mof', unique('R'), { amount: '100000000000000' });
    const { service, reported } = serviceAnswering({ mof: [bad], etax: [], police: [] });
    await expect(service.getByRef(partnerId, bad.refNum)).rejects.toBeInstanceOf(UpstreamUnavailableError);
    expect(reported).toEqual(['mof getByRef']);
  });
});
