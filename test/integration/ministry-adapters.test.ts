import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { loadFixtures } from '../../simulator/fixtures.schema.js';
import { buildSimulator } from '../../simulator/simulator.app.js';
import { type ClosableMinistryAdapters, createMinistryAdapters } from '../../src/adapters/ministry/ministry.factory.js';
import type { UpstreamInvoice } from '../../src/domain/ministry.port.js';
import { type Source, SOURCES } from '../../src/domain/vocabulary.js';
import { upstreamError } from '../helpers/upstream-error.js';

const FIXTURES = fileURLToPath(new URL('../fixtures/simulator-fixtures.json', import.meta.url));
const PREFIX: Record<Source, string> = { mof: 'MOF-T', etax: 'ET9', police: 'P-9' };
const ref = (source: Source, suffix: string): string => `${PREFIX[source]}${suffix}`;

let simulator: FastifyInstance;
let adapters: ClosableMinistryAdapters;
let fastFail: ClosableMinistryAdapters;

async function control(url: string, payload: unknown) {
  return simulator.inject({ method: 'POST', url: `/__control/${url}`, payload: payload as object });
}

/** YYYY-MM-DD in Mongolian time (UTC+8). */
function financeDayNow(): string {
  return new Date(Date.now() + 8 * 3600_000).toISOString().slice(0, 10);
}

beforeAll(async () => {
  simulator = await buildSimulator({ fixtures: await loadFixtures(FIXTURES), autoApproveMs: 0 });
  const root = await simulator.listen({ host: '127.0.0.1', port: 0 });
  const urls = { mof: root, etax: root, police: root };
  adapters = createMinistryAdapters({ urls, timeoutMs: 3000 });
  fastFail = createMinistryAdapters({ urls, timeoutMs: 300 });
});

afterAll(async () => {
  await adapters?.close();
  await fastFail?.close();
  await simulator?.close();
});

beforeEach(async () => {
  await control('reset', {});
});

describe('invoice mapping', () => {
  const common = {
    dueDate: '2025-11-01T01:30:00.000Z',
    issuedAt: '2025-10-01T16:00:00.000Z',
    vehicleNo: '1111УБА',
    payer: { register: '7000001', name: 'Тест Трейд ХХК' },
  };

  it('maps a mof invoice: number amount, numeric year, ISO dates', async () => {
    expect(await adapters.mof.getByRef('MOF-T001')).toEqual<UpstreamInvoice>({
      ...common,
      source: 'mof',
      refNum: 'MOF-T001',
      description: 'mof vehicle invoice',
      amount: '12000',
      status: 'open',
      taxRef: 'TR-TEST-mof',
      payee: { id: 'ORG-MOF', name: 'Сангийн яам' },
      year: 2025,
    });
  });

  it('maps an etax bill: decimal-string amount, string year, UTC+8 local dates', async () => {
    expect(await adapters.etax.getByRef('ET9001')).toEqual<UpstreamInvoice>({
      ...common,
      source: 'etax',
      refNum: 'ET9001',
      description: 'etax vehicle invoice',
      amount: '12000.25',
      status: 'open',
      taxRef: 'TR-TEST-etax',
      payee: { id: 'ORG-MTA', name: 'Татварын ерөнхий газар' },
      year: '2025',
    });
  });

  it('maps a police fine: möngö amount, epoch dates', async () => {
    expect(await adapters.police.getByRef('P-9001')).toEqual<UpstreamInvoice>({
      ...common,
      source: 'police',
      refNum: 'P-9001',
      description: 'police vehicle invoice',
      amount: '12000.5',
      status: 'open',
      taxRef: 'TR-TEST-police',
      payee: { id: 'ORG-NPA', name: 'Цагдаагийн ерөнхий газар' },
      year: 2024,
    });
  });

  it('passes a string year through from police and a numeric-looking decimal from mof', async () => {
    const invoice = { source: 'police', refNum: 'P-9100', description: 'x', amount: 99.9, status: 'open' };
    await control('invoices', { ...invoice, payee: { id: 'ORG-NPA', name: 'ЦЕГ' }, year: '2024' });
    await control('invoices', { ...invoice, source: 'mof', refNum: 'MOF-T100', amount: 12000.75, payee: { id: 'O', name: 'С' } });
    const police = await adapters.police.getByRef('P-9100');
    const mof = await adapters.mof.getByRef('MOF-T100');
    expect(police).toMatchObject({ year: '2024', amount: '99.9', dueDate: null, payer: null });
    expect(mof).toMatchObject({ year: null, amount: '12000.75', vehicleNo: null, taxRef: null });
  });

  it.each(SOURCES)('%s: null payer and null dates stay null', async (source) => {
    const invoice = await adapters[source].getByRef(ref(source, '006'));
    expect(invoice).toMatchObject({ payer: null, dueDate: null, issuedAt: null, year: null, vehicleNo: '2222УБА' });
  });

  it.each(SOURCES)('%s: maps paid and canceled statuses', async (source) => {
    expect((await adapters[source].getByRef(ref(source, '003')))?.status).toBe('paid');
    expect((await adapters[source].getByRef(ref(source, '004')))?.status).toBe('canceled');
  });

  it.each(SOURCES)('%s: getByRef of an unknown reference is null', async (source) => {
    expect(await adapters[source].getByRef(ref(source, '999'))).toBeNull();
  });
});

describe.each(SOURCES)('%s search', (source) => {
  const refNums = (invoices: UpstreamInvoice[]) => invoices.map((invoice) => invoice.refNum).sort();

  it('finds by taxpayer number', async () => {
    const found = await adapters[source].search({ kind: 'ttd', value: '7000001' });
    expect(refNums(found)).toEqual(['001', '002', '003', '004', '005'].map((suffix) => ref(source, suffix)));
    expect(found.every((invoice) => invoice.source === source)).toBe(true);
  });

  it('finds by vehicle plate', async () => {
    expect(refNums(await adapters[source].search({ kind: 'vehicle', value: '1111УБА' }))).toEqual([ref(source, '001')]);
  });

  it('finds by tax reference', async () => {
    const found = await adapters[source].search({ kind: 'taxRef', value: `TR-TEST-${source}` });
    expect(refNums(found)).toEqual([ref(source, '001')]);
  });

  it('returns an empty list when nothing matches', async () => {
    expect(await adapters[source].search({ kind: 'ttd', value: 'nobody' })).toEqual([]);
  });
});

/** The whole balance of each system's invoice 001, which takes no part-payments. */
const FULL_001: Record<Source, string> = { mof: '12000', etax: '12000.25', police: '12000.5' };

describe.each(SOURCES)('%s payments', (source) => {
  const adapter = () => adapters[source];
  const submit = (suffix: string, amount: string, paymentId = `pay-${source}-${suffix}-${amount}`) =>
    adapter().submitPayment({ paymentId, refNum: ref(source, suffix), amount });

  it('accepts a payment and names the linked invoices', async () => {
    expect(await submit('001', FULL_001[source])).toEqual({ accepted: true, linkedRefNums: [ref(source, '002')] });
  });

  it('gives the same answer to a resubmitted payment id without a second payment', async () => {
    const first = await submit('002', '300', 'retry-1');
    const again = await submit('002', '300', 'retry-1');
    expect(again).toEqual(first);
    const listed = await simulator.inject({ method: 'GET', url: '/__control/payments' });
    const payments = listed.json<{ payments: { paymentId: string; source: string }[] }>().payments;
    expect(payments.filter((payment) => payment.paymentId === 'retry-1' && payment.source === source)).toHaveLength(1);
  });

  it.each([
    ['999', '100', 'invoice not found'],
    ['003', '100', 'already paid'],
    ['004', '100', 'canceled'],
    ['005', '100', 'not accepted at this time'],
    ['002', '0', 'amount does not match the invoice balance'],
    ['002', '300.01', 'amount does not match the invoice balance'],
    ['001', '100', 'amount does not match the invoice balance'],
  ])('refuses %s paying %s: %s', async (suffix, amount, reason) => {
    expect(await submit(suffix, amount)).toEqual({ accepted: false, reason });
  });

  it('accepts a partial amount with decimals', async () => {
    expect(await submit('002', '150.5')).toEqual({ accepted: true, linkedRefNums: [] });
  });

  it('refuses a second payment while one is in progress, including for a linked invoice', async () => {
    await submit('001', FULL_001[source], 'first');
    expect(await submit('001', FULL_001[source], 'second')).toEqual({ accepted: false, reason: 'payment already in progress' });
    expect(await submit('002', '300', 'third')).toEqual({ accepted: false, reason: 'payment already in progress' });
  });

  it('reports submitted, then confirmed after approval; invoice and linked invoice become paid', async () => {
    const paymentRef = { paymentId: 'approve-me', refNum: ref(source, '001') };
    await submit('001', FULL_001[source], paymentRef.paymentId);
    expect(await adapter().getPayment(paymentRef)).toEqual({ status: 'submitted', confirmedAt: null });

    const approved = await control('approve', { refNum: ref(source, '001'), source });
    expect(approved.statusCode).toBe(200);
    const state = await adapter().getPayment(paymentRef);
    expect(state.status).toBe('confirmed');
    expect(state.confirmedAt).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
    expect((await adapter().getByRef(ref(source, '001')))?.status).toBe('paid');
    expect((await adapter().getByRef(ref(source, '002')))?.status).toBe('paid');
  });

  it('cancels a confirmed payment and reopens the invoices', async () => {
    const paymentRef = { paymentId: 'cancel-me', refNum: ref(source, '001') };
    await submit('001', FULL_001[source], paymentRef.paymentId);
    await control('approve', { refNum: ref(source, '001'), source });
    expect(await adapter().cancelPayment(paymentRef)).toBe('canceled');
    expect((await adapter().getPayment(paymentRef)).status).toBe('canceled');
    expect((await adapter().getByRef(ref(source, '001')))?.status).toBe('open');
    expect((await adapter().getByRef(ref(source, '002')))?.status).toBe('open');
  });

  it('reports an unknown payment as unknown, and a cancel of it as finding none', async () => {
    const paymentRef = { paymentId: 'never-sent', refNum: ref(source, '001') };
    expect(await adapter().getPayment(paymentRef)).toEqual({ status: 'unknown', confirmedAt: null });
    expect(await adapter().cancelPayment(paymentRef)).toBe('unknown');
    expect(await adapter().getPayment(paymentRef)).toEqual({ status: 'unknown', confirmedAt: null });
  });

  it('lists confirmed payments of the finance day in the settlement report', async () => {
    await submit('001', FULL_001[source], 'settle-1');
    await submit('006', '4999.99', 'settle-2');
    await submit('002', '300', 'not-approved');
    await control('approve', { refNum: ref(source, '001'), source });
    await control('approve', { refNum: ref(source, '006'), source });

    const entries = await adapter().settlement(financeDayNow());
    expect(entries).toEqual([
      {
        paymentId: 'settle-1',
        refNum: ref(source, '001'),
        amount: FULL_001[source],
        payerReg: '7000001',
        payerName: 'Тест Трейд ХХК',
        description: `${source} vehicle invoice`,
        date: expect.stringMatching(/Z$/),
      },
      {
        paymentId: 'settle-2',
        refNum: ref(source, '006'),
        amount: '4999.99',
        payerReg: '',
        payerName: '',
        description: `${source} no payer`,
        date: expect.stringMatching(/Z$/),
      },
    ]);
    const confirmedAt = (await adapter().getPayment({ paymentId: 'settle-1', refNum: ref(source, '001') })).confirmedAt;
    // etax times travel with whole seconds only.
    expect(entries[0]?.date.slice(0, 19)).toBe(confirmedAt?.slice(0, 19));
    expect(await adapter().settlement('2020-01-01')).toEqual([]);
  });

  it('tells apart two payments of one invoice in the settlement report by payment id', async () => {
    const first = { paymentId: 'first-try', refNum: ref(source, '002') };
    await submit('002', '300', first.paymentId);
    await control('approve', { refNum: first.refNum, source });
    await adapter().cancelPayment(first);
    await submit('002', '100', 'second-try');
    await control('approve', { refNum: first.refNum, source });
    const entries = await adapter().settlement(financeDayNow());
    expect(entries.map(({ paymentId, refNum, amount }) => ({ paymentId, refNum, amount }))).toEqual([
      { paymentId: 'second-try', refNum: first.refNum, amount: '100' },
    ]);
  });

  it('cancels a submitted payment without touching invoices another payment paid', async () => {
    await submit('002', '300', 'holds-b');
    expect(await submit('001', FULL_001[source], 'links-b')).toEqual({ accepted: true, linkedRefNums: [ref(source, '002')] });
    const approved = await control('approve', { refNum: ref(source, '002'), source });
    expect(approved.json()).toMatchObject({ approved: { paymentId: 'holds-b' } });
    await adapter().cancelPayment({ paymentId: 'links-b', refNum: ref(source, '001') });
    expect((await adapter().getPayment({ paymentId: 'links-b', refNum: ref(source, '001') })).status).toBe('canceled');
    expect((await adapter().getByRef(ref(source, '001')))?.status).toBe('open');
    expect((await adapter().getByRef(ref(source, '002')))?.status).toBe('paid');
    expect((await adapter().getPayment({ paymentId: 'holds-b', refNum: ref(source, '002') })).status).toBe('confirmed');
  });

  it('leaves a canceled payment out of the settlement report', async () => {
    const paymentRef = { paymentId: 'settle-then-cancel', refNum: ref(source, '001') };
    await submit('001', FULL_001[source], paymentRef.paymentId);
    await control('approve', { refNum: ref(source, '001'), source });
    await adapter().cancelPayment(paymentRef);
    expect(await adapter().settlement(financeDayNow())).toEqual([]);
  });
});

describe.each(SOURCES)('%s outcomes the ministry decides on its own', (source) => {
  const paymentRef = { paymentId: `decided-${source}`, refNum: ref(source, '001') };
  const outcome = (name: string) => control('payments/outcome', { refNum: paymentRef.refNum, source, outcome: name });

  beforeEach(async () => {
    expect((await adapters[source].submitPayment({ ...paymentRef, amount: FULL_001[source] })).accepted).toBe(true);
  });

  it('rejected after acceptance reads as rejected and frees the invoices', async () => {
    expect((await outcome('rejected')).statusCode).toBe(200);
    expect(await adapters[source].getPayment(paymentRef)).toEqual({ status: 'rejected', confirmedAt: null });
    expect((await adapters[source].getByRef(paymentRef.refNum))?.status).toBe('open');
    const retry = { paymentId: `retry-${source}`, refNum: ref(source, '002'), amount: '300' };
    expect(await adapters[source].submitPayment(retry)).toEqual({ accepted: true, linkedRefNums: [] });
  });

  it('canceled by the ministry reads as canceled, the invoice still open', async () => {
    expect((await outcome('canceled')).statusCode).toBe(200);
    expect(await adapters[source].getPayment(paymentRef)).toEqual({ status: 'canceled', confirmedAt: null });
    expect((await adapters[source].getByRef(paymentRef.refNum))?.status).toBe('open');
  });

  it('forgotten by the ministry reads as unknown, and the same id is accepted again as new', async () => {
    expect((await outcome('unknown')).statusCode).toBe(200);
    expect(await adapters[source].getPayment(paymentRef)).toEqual({ status: 'unknown', confirmedAt: null });
    expect(await adapters[source].submitPayment({ ...paymentRef, amount: FULL_001[source] })).toEqual({
      accepted: true,
      linkedRefNums: [ref(source, '002')],
    });
    expect(await adapters[source].getPayment(paymentRef)).toEqual({ status: 'submitted', confirmedAt: null });
  });
});

describe.each(SOURCES)('%s faults', (source) => {
  const setFault = (mode: string, delayMs?: number) => control('faults', { source, mode, delayMs });

  it('an upstream 500 is an http error', async () => {
    await setFault('error');
    expect((await upstreamError(adapters[source].getByRef(ref(source, '001')))).kind).toBe('http');
    expect((await upstreamError(adapters[source].search({ kind: 'ttd', value: '7000001' }))).kind).toBe('http');
  });

  it('an answer that never comes is a timeout', async () => {
    await setFault('timeout');
    const error = await upstreamError(fastFail[source].getByRef(ref(source, '001')));
    expect(error.kind).toBe('timeout');
    expect(error.source).toBe(source);
  });

  it('a body of the wrong shape is malformed', async () => {
    await setFault('malformed');
    expect((await upstreamError(adapters[source].getByRef(ref(source, '001')))).kind).toBe('malformed');
    const payment = { paymentId: 'p', refNum: ref(source, '001') };
    expect((await upstreamError(adapters[source].getPayment(payment))).kind).toBe('malformed');
  });

  it('a slow answer within the timeout still works', async () => {
    await setFault('slow', 50);
    expect((await fastFail[source].getByRef(ref(source, '001')))?.refNum).toBe(ref(source, '001'));
  });

  it('a fault scoped to cancel times out cancels while the status still answers', async () => {
    const paymentRef = { paymentId: `scoped-${source}`, refNum: ref(source, '002') };
    await adapters[source].submitPayment({ ...paymentRef, amount: '300' });
    await control('faults', { source, mode: 'timeout', operation: 'cancel' });
    expect((await upstreamError(fastFail[source].cancelPayment(paymentRef))).kind).toBe('timeout');
    // The answers are read through the adapters with room to answer: only the cancel is meant to time out.
    expect(await adapters[source].getPayment(paymentRef)).toEqual({ status: 'submitted', confirmedAt: null });
    expect(await adapters[source].settlement(financeDayNow())).toEqual([]);
  });

  it('a fault scoped to settlement leaves searches alone', async () => {
    await control('faults', { source, mode: 'malformed', operation: 'settlement' });
    expect((await upstreamError(adapters[source].settlement(financeDayNow()))).kind).toBe('malformed');
    expect(await adapters[source].search({ kind: 'vehicle', value: '1111УБА' })).toHaveLength(1);
  });

  it('a fault affects only its own source and clears with mode none', async () => {
    await setFault('error');
    const other = SOURCES.find((candidate) => candidate !== source) ?? 'mof';
    expect(await adapters[other].getByRef(ref(other, '001'))).not.toBeNull();
    await setFault('none');
    expect(await adapters[source].getByRef(ref(source, '001'))).not.toBeNull();
  });
});

describe('transport failures', () => {
  it('a 404 that is not the ministry speaking (wrong base URL) is an http error, not "unknown"', async () => {
    const root = `http://127.0.0.1:${(simulator.server.address() as AddressInfo).port}/wrong-prefix`;
    const misrouted = createMinistryAdapters({ urls: { mof: root, etax: root, police: root }, timeoutMs: 1000 });
    try {
      for (const source of SOURCES) {
        const paymentRef = { paymentId: 'p', refNum: ref(source, '001') };
        expect((await upstreamError(misrouted[source].getPayment(paymentRef))).kind).toBe('http');
        expect((await upstreamError(misrouted[source].getByRef(ref(source, '001')))).kind).toBe('http');
      }
    } finally {
      await misrouted.close();
    }
  });


  it('a 200 body that is not JSON is malformed', async () => {
    const server = createServer((_request, response) => response.end('<html>maintenance</html>'));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const htmlOnly = createMinistryAdapters({ urls: { mof: url, etax: url, police: url }, timeoutMs: 1000 });
    try {
      expect((await upstreamError(htmlOnly.mof.getByRef('MOF-T001'))).kind).toBe('malformed');
    } finally {
      await htmlOnly.close();
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it('a settlement row without its payment id is malformed', async () => {
    const row = { invoiceNo: 'MOF-T001', amount: 1, payerRegNo: null, payerName: null, title: 't', settledAt: new Date().toISOString() };
    const server = createServer((_request, response) => {
      response.setHeader('content-type', 'application/json');
      response.end(JSON.stringify({ data: [row] }));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const legacy = createMinistryAdapters({ urls: { mof: url, etax: url, police: url }, timeoutMs: 1000 });
    try {
      const error = await upstreamError(legacy.mof.settlement('2025-01-01'));
      expect(error.kind).toBe('malformed');
      expect(error.message).toMatch(/paymentId/);
    } finally {
      await legacy.close();
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it('a refused connection is a network error', async () => {
    const probe = await buildSimulator({ fixtures: { invoices: [] }, autoApproveMs: 0 });
    const url = await probe.listen({ host: '127.0.0.1', port: 0 });
    await probe.close();
    const offline = createMinistryAdapters({ urls: { mof: url, etax: url, police: url }, timeoutMs: 1000 });
    try {
      const error = await upstreamError(offline.etax.search({ kind: 'ttd', value: '1' }));
      expect(error.kind).toBe('network');
    } finally {
      await offline.close();
    }
  });
});
