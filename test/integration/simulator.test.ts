import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance } from 'fastify';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { type FixtureFile, loadFixtures } from '../../simulator/fixtures.schema.js';
import { buildSimulator } from '../../simulator/simulator.app.js';
import { DEMO_FIXTURES_PATH, loadSimulatorConfig } from '../../simulator/simulator.config.js';
import { financeDayOf } from '../../simulator/simulator.time.js';

const TEST_FIXTURES = fileURLToPath(new URL('../fixtures/simulator-fixtures.json', import.meta.url));

interface ListedPayment {
  source: string;
  paymentId: string;
  refNum: string;
  amount: string;
  status: string;
  confirmedAt: string | null;
}

async function writeTemp(name: string, content: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'simulator-fixtures-'));
  const path = join(dir, name);
  await writeFile(path, content);
  return path;
}

describe('fixture loading', () => {
  it('loads the test fixtures', async () => {
    const fixtures = await loadFixtures(TEST_FIXTURES);
    expect(fixtures.invoices).toHaveLength(18);
  });

  it('rejects a file that does not match the schema with the path and field', async () => {
    const path = await writeTemp('bad.json', JSON.stringify({ invoices: [{ source: 'bank', refNum: 'X' }] }));
    await expect(loadFixtures(path)).rejects.toThrow(/Invalid simulator fixtures file .*bad\.json: \/invoices\/0/);
  });

  it('rejects unparsable JSON, too many decimals, duplicates and dangling links', async () => {
    const invoice = { source: 'mof', refNum: 'A', description: 'd', amount: 1.005, status: 'open', payee: { id: 'g', name: 'G' } };
    await expect(loadFixtures(await writeTemp('broken.json', '{ "invoices": ['))).rejects.toThrow(/broken\.json/);
    await expect(loadFixtures(await writeTemp('money.json', JSON.stringify({ invoices: [invoice] })))).rejects.toThrow(
      /at most 2 decimals/,
    );
    const twice = { invoices: [{ ...invoice, amount: 1 }, { ...invoice, amount: 2 }] };
    await expect(loadFixtures(await writeTemp('twice.json', JSON.stringify(twice)))).rejects.toThrow(/duplicate refNum/);
    const dangling = { invoices: [{ ...invoice, amount: 1, linkedRefNums: ['B'] }] };
    await expect(loadFixtures(await writeTemp('link.json', JSON.stringify(dangling)))).rejects.toThrow(/linked invoice B/);
  });
});

describe('simulator config', () => {
  it('defaults to port 3100, the demo fixtures and 5 s auto-approval', () => {
    expect(loadSimulatorConfig({})).toEqual({
      host: '127.0.0.1',
      port: 3100,
      fixturesPath: DEMO_FIXTURES_PATH,
      autoApproveMs: 5000,
      logLevel: 'info',
    });
  });

  it('reads overrides and refuses nonsense', () => {
    const env = { SIMULATOR_PORT: '4100', SIMULATOR_AUTO_APPROVE_MS: '0', SIMULATOR_FIXTURES: '/f.json', HOST: '0.0.0.0', LOG_LEVEL: 'warn' };
    expect(loadSimulatorConfig(env)).toEqual({ host: '0.0.0.0', port: 4100, fixturesPath: '/f.json', autoApproveMs: 0, logLevel: 'warn' });
    expect(() => loadSimulatorConfig({ SIMULATOR_AUTO_APPROVE_MS: 'soon' })).toThrow(/SIMULATOR_AUTO_APPROVE_MS/);
  });
});

describe('demo fixtures', () => {
  let demo: FixtureFile;
  beforeAll(async () => {
    demo = await loadFixtures(DEMO_FIXTURES_PATH);
  });
  const of = (register: string) => demo.invoices.filter((invoice) => invoice.payer?.register === register);

  it('give taxpayer 5317878 open invoices in every source', () => {
    const open = of('5317878').filter((invoice) => invoice.status === 'open');
    expect(new Set(open.map((invoice) => invoice.source))).toEqual(new Set(['mof', 'etax', 'police']));
  });

  it('cover the walk-through cases', () => {
    const invoices = of('5317878');
    expect(invoices.some((invoice) => invoice.status === 'open' && (invoice.dueDate ?? '') >= '2027')).toBe(true);
    expect(invoices.some((invoice) => invoice.status === 'open' && (invoice.dueDate ?? '').startsWith('2025'))).toBe(true);
    expect(invoices.some((invoice) => invoice.status === 'paid')).toBe(true);
    expect(invoices.some((invoice) => invoice.rejectPayment)).toBe(true);
    expect(invoices.some((invoice) => (invoice.linkedRefNums ?? []).length > 0)).toBe(true);
    expect(invoices.some((invoice) => invoice.taxRef === 'TR-2025-000123')).toBe(true);
    const plate = demo.invoices.filter((invoice) => invoice.vehicleNo === '1234УБА');
    expect(plate.map((invoice) => typeof invoice.year)).toEqual(expect.arrayContaining(['number', 'string']));
    expect(plate.some((invoice) => invoice.source === 'police')).toBe(true);
    expect(of('УБ99031512').length).toBeGreaterThanOrEqual(2);
  });
});

describe('simulator HTTP', () => {
  let app: FastifyInstance;
  const post = (url: string, payload: object) => app.inject({ method: 'POST', url, payload });
  const listPayments = async () =>
    (await app.inject({ method: 'GET', url: '/__control/payments' })).json<{ payments: ListedPayment[] }>().payments;

  beforeAll(async () => {
    app = await buildSimulator({ fixtures: await loadFixtures(TEST_FIXTURES), autoApproveMs: 0 });
  });
  afterAll(async () => {
    await app.close();
  });
  beforeEach(async () => {
    await post('/__control/reset', {});
  });

  describe('wire formats', () => {
    it('mof speaks camelCase with numeric amounts and ISO dates', async () => {
      const response = await app.inject({ method: 'GET', url: '/mof/api/invoices/MOF-T001' });
      expect(response.json()).toMatchObject({
        data: { invoiceNo: 'MOF-T001', totalAmount: 12000, paymentStatus: 'UNPAID', dueDate: '2025-11-01T01:30:00.000Z', taxYear: 2025 },
      });
    });

    it('etax speaks snake_case with decimal strings, status codes and UTC+8 local times', async () => {
      const response = await app.inject({ method: 'GET', url: '/etax/v2/bills?tax_ref=TR-TEST-etax' });
      expect(response.json()).toMatchObject({
        result: {
          bills: [
            { bill_no: 'ET9001', bill_amount: '12000.25', status_code: 0, due_date: '2025-11-01 09:30:00', tax_year: '2025' },
          ],
        },
      });
    });

    it('police speaks UPPER_SNAKE with möngö amounts and epoch milliseconds', async () => {
      const response = await post('/police/api/fines/search', { SEARCH_TYPE: 'PLATE', SEARCH_VALUE: '1111УБА' });
      expect(response.json()).toMatchObject({
        RESULT_CODE: 0,
        FINES: [{ FINE_NO: 'P-9001', FINE_AMOUNT: 1200050, FINE_STATUS: 'N', DUE_DATE: Date.parse('2025-11-01T01:30:00Z') }],
      });
    });

    it('refuses searches without exactly one filter', async () => {
      expect((await app.inject({ method: 'GET', url: '/mof/api/invoices' })).statusCode).toBe(400);
      expect((await app.inject({ method: 'GET', url: '/etax/v2/bills?tin=1&plate_no=2' })).statusCode).toBe(400);
      expect((await post('/police/api/fines/search', { SEARCH_TYPE: 'NAME', SEARCH_VALUE: 'x' })).statusCode).toBe(400);
    });

    it('answers 404 for unknown invoices and payments in each source format', async () => {
      const mof = await app.inject({ method: 'GET', url: '/mof/api/payments/nope' });
      const etax = await app.inject({ method: 'GET', url: '/etax/v2/bills/nope' });
      const police = await app.inject({ method: 'GET', url: '/police/api/fines/nope' });
      expect([mof.statusCode, etax.statusCode, police.statusCode]).toEqual([404, 404, 404]);
      expect(mof.json()).toMatchObject({ error: { code: 'NOT_FOUND' } });
      expect(etax.json()).toMatchObject({ error_code: 'E_NOT_FOUND' });
      expect(police.json()).toMatchObject({ RESULT_CODE: 404 });
    });

    it('refuses a payment in each source format', async () => {
      const etax = await post('/etax/v2/payments', { payment_id: 'r1', bill_no: 'ET9003', paid_amount: '1.00' });
      expect(etax.statusCode).toBe(422);
      expect(etax.json()).toEqual({ error_code: 'E_REJECTED', error_msg: 'already paid' });
      const police = await post('/police/api/payments', { PAYMENT_ID: 'r2', FINE_NO: 'P-9005', PAY_AMOUNT: 100 });
      expect(police.json()).toEqual({ RESULT_CODE: 2001, RESULT_MSG: 'not accepted at this time' });
    });
  });

  describe('control API', () => {
    const invoice = {
      source: 'etax',
      refNum: 'ET-NEW',
      description: 'added by a test',
      amount: 10.5,
      status: 'open',
      payer: { register: 'R-NEW', name: 'New' },
      payee: { id: 'g', name: 'G' },
    };

    it('adds a single invoice and replaces it by source and refNum', async () => {
      expect((await post('/__control/invoices', invoice)).statusCode).toBe(200);
      await post('/__control/invoices', { invoices: [{ ...invoice, amount: 20 }] });
      const bills = (await app.inject({ method: 'GET', url: '/etax/v2/bills?tin=R-NEW' })).json();
      expect(bills).toMatchObject({ result: { bills: [{ bill_no: 'ET-NEW', bill_amount: '20.00' }] } });
    });

    it('refuses an invalid invoice with the problems listed', async () => {
      const response = await post('/__control/invoices', { ...invoice, amount: 'ten' });
      expect(response.statusCode).toBe(400);
      expect(response.json<{ problems: string[] }>().problems.join()).toMatch(/amount/);
    });

    it('approve without a submitted payment is 404; with one it confirms', async () => {
      expect((await post('/__control/approve', { refNum: 'MOF-T002' })).statusCode).toBe(404);
      await post('/mof/api/payments', { paymentId: 'a1', invoiceNo: 'MOF-T002', amount: 300 });
      const approved = await post('/__control/approve', { refNum: 'MOF-T002' });
      expect(approved.json()).toMatchObject({ approved: { paymentId: 'a1', status: 'confirmed', amount: '300.00' } });
    });

    it('reset restores fixtures and clears payments and faults', async () => {
      await post('/__control/invoices', invoice);
      await post('/mof/api/payments', { paymentId: 'r1', invoiceNo: 'MOF-T002', amount: 300 });
      await post('/__control/faults', { source: 'mof', mode: 'error' });
      await post('/__control/reset', {});
      expect(await listPayments()).toEqual([]);
      expect((await app.inject({ method: 'GET', url: '/etax/v2/bills/ET-NEW' })).statusCode).toBe(404);
      expect((await app.inject({ method: 'GET', url: '/mof/api/invoices/MOF-T001' })).statusCode).toBe(200);
    });

    it('reports a status call that arrived while another for the same payment was unanswered, and reset forgets them', async () => {
      await post('/mof/api/payments', { paymentId: 's1', invoiceNo: 'MOF-T002', amount: 300 });
      await post('/__control/faults', { source: 'mof', mode: 'slow', delayMs: 200, operation: 'status' });
      const status = (id: string) => app.inject({ method: 'GET', url: `/mof/api/payments/${id}` });
      const statusCalls = async () => (await app.inject({ method: 'GET', url: '/__control/status-calls' })).json<{ calls: number; overlaps: { source: string; paymentId: string; inFlight: number }[] }>();
      // One after the other, and beside a call for another payment: no overlap.
      await Promise.all([status('s1'), status('other')]);
      await status('s1');
      expect(await statusCalls()).toEqual({ calls: 3, overlaps: [] });
      const both = await Promise.all([status('s1'), status('s1')]);
      expect(both.map((r) => r.statusCode)).toEqual([200, 200]);
      expect(await statusCalls()).toMatchObject({ calls: 5, overlaps: [{ source: 'mof', paymentId: 's1', inFlight: 2 }] });
      await post('/__control/reset', {});
      expect(await statusCalls()).toEqual({ calls: 0, overlaps: [] });
    });

    it('late: the answer is decided when the call arrives and delivered delayMs later', async () => {
      await post('/mof/api/payments', { paymentId: 'l1', invoiceNo: 'MOF-T002', amount: 300 });
      const fault = await post('/__control/faults', { source: 'mof', mode: 'late', delayMs: 300, operation: 'status' });
      expect(fault.json()).toEqual({ source: 'mof', operation: 'status', mode: 'late', delayMs: 300, perInFlightMs: 0 });
      const startedAt = performance.now();
      const asked = app.inject({ method: 'GET', url: '/mof/api/payments/l1' });
      await vi.waitFor(async () => expect((await app.inject({ method: 'GET', url: '/__control/calls?source=mof&operation=status' })).json()).toMatchObject({ inFlight: 1 }));
      expect((await post('/__control/approve', { refNum: 'MOF-T002' })).statusCode).toBe(200);
      const answer = await asked;
      expect(performance.now() - startedAt).toBeGreaterThanOrEqual(300);
      expect(answer.json()).toMatchObject({ data: { state: 'PENDING' } });
      expect((await app.inject({ method: 'GET', url: '/mof/api/payments/l1' })).json()).toMatchObject({ data: { state: 'APPROVED' } });
    });

    it('refuses an unknown fault mode', async () => {
      expect((await post('/__control/faults', { source: 'mof', mode: 'explode' })).statusCode).toBe(400);
    });

    it('a fault covers every route of its source, including payments and settlement', async () => {
      await post('/__control/faults', { source: 'police', mode: 'malformed' });
      const search = await post('/police/api/fines/search', { SEARCH_TYPE: 'PLATE', SEARCH_VALUE: '1111УБА' });
      const settlement = await app.inject({ method: 'GET', url: '/police/api/settlement/20250101' });
      for (const response of [search, settlement]) {
        expect(response.statusCode).toBe(200);
        expect(response.json()).not.toHaveProperty('RESULT_CODE');
      }
    });
  });

  describe('ministry outcomes', () => {
    const submitMof = (paymentId: string, invoiceNo: string, amount: number) =>
      post('/mof/api/payments', { paymentId, invoiceNo, amount });
    const mofPayment = (paymentId: string) => app.inject({ method: 'GET', url: `/mof/api/payments/${paymentId}` });
    const mofInvoiceStatus = async (invoiceNo: string) =>
      (await app.inject({ method: 'GET', url: `/mof/api/invoices/${invoiceNo}` })).json<{ data: { paymentStatus: string } }>().data
        .paymentStatus;

    it('refuses a malformed body and answers 404 when the invoice has no submitted payment', async () => {
      expect((await post('/__control/payments/outcome', { refNum: 'MOF-T001', outcome: 'lost' })).statusCode).toBe(400);
      expect((await post('/__control/payments/outcome', { outcome: 'rejected' })).statusCode).toBe(400);
      const none = await post('/__control/payments/outcome', { refNum: 'MOF-T001', outcome: 'rejected' });
      expect(none.statusCode).toBe(404);
      expect(none.json()).toHaveProperty('error');
    });

    it('rejected: the payment reads rejected in every wire format, its holds go, invoices stay open', async () => {
      await submitMof('rej', 'MOF-T001', 12000);
      await post('/etax/v2/payments', { payment_id: 'rej', bill_no: 'ET9001', paid_amount: '12000.25' });
      await post('/police/api/payments', { PAYMENT_ID: 'rej', FINE_NO: 'P-9001', PAY_AMOUNT: 1200050 });
      for (const [refNum, source] of [['MOF-T001', 'mof'], ['ET9001', 'etax'], ['P-9001', 'police']]) {
        const answer = await post('/__control/payments/outcome', { refNum, source, outcome: 'rejected' });
        expect(answer.statusCode).toBe(200);
        expect(answer.json()).toMatchObject({ payment: { paymentId: 'rej', refNum, source, status: 'rejected' } });
      }
      expect((await mofPayment('rej')).json()).toMatchObject({ data: { state: 'REJECTED', approvedAt: null } });
      expect((await app.inject({ method: 'GET', url: '/etax/v2/payments/rej' })).json()).toMatchObject({
        result: { payment: { status_code: 40, confirmed_at: null } },
      });
      expect((await app.inject({ method: 'GET', url: '/police/api/payments/rej' })).json()).toMatchObject({
        PAYMENT: { PAY_STATUS: 'REJECTED', CONFIRMED_AT: null },
      });
      expect([await mofInvoiceStatus('MOF-T001'), await mofInvoiceStatus('MOF-T002')]).toEqual(['UNPAID', 'UNPAID']);
      // Both the invoice and its linked one are free again.
      expect((await submitMof('again', 'MOF-T002', 300)).json()).toMatchObject({ data: { accepted: true } });
      expect((await post('/__control/approve', { refNum: 'MOF-T001' })).statusCode).toBe(404);
    });

    it('canceled: the payment reads REVERSED, its invoice stays open and is free again', async () => {
      await submitMof('gone', 'MOF-T002', 300);
      const answer = await post('/__control/payments/outcome', { refNum: 'MOF-T002', outcome: 'canceled' });
      expect(answer.json()).toMatchObject({ payment: { paymentId: 'gone', status: 'canceled', canceledAt: expect.any(String) } });
      expect((await mofPayment('gone')).json()).toMatchObject({ data: { state: 'REVERSED' } });
      expect(await mofInvoiceStatus('MOF-T002')).toBe('UNPAID');
      expect((await submitMof('next', 'MOF-T002', 300)).json()).toMatchObject({ data: { accepted: true } });
    });

    it('unknown: the ministry forgets the payment and takes its id again as new', async () => {
      await submitMof('lost', 'MOF-T001', 12000);
      const answer = await post('/__control/payments/outcome', { refNum: 'MOF-T001', source: 'mof', outcome: 'unknown' });
      expect(answer.json()).toEqual({ forgotten: { paymentId: 'lost', refNum: 'MOF-T001', source: 'mof' } });
      const status = await mofPayment('lost');
      expect(status.statusCode).toBe(404);
      expect(status.json()).toEqual((await mofPayment('never-seen')).json());
      expect(await listPayments()).toEqual([]);
      // Linked invoice released too, and the same id is a new payment (of another invoice and amount, even).
      expect((await submitMof('lost', 'MOF-T002', 300)).json()).toMatchObject({ data: { accepted: true, linkedInvoices: [] } });
      expect(await listPayments()).toMatchObject([{ paymentId: 'lost', refNum: 'MOF-T002', amount: '300.00', status: 'submitted' }]);
    });

    it('acts only in the given source', async () => {
      await submitMof('only-mof', 'MOF-T002', 300);
      expect((await post('/__control/payments/outcome', { refNum: 'MOF-T002', source: 'etax', outcome: 'rejected' })).statusCode).toBe(404);
    });
  });

  describe('balances and part-payments', () => {
    const partial = { source: 'mof', refNum: 'MOF-PART', description: 'part-payments taken', amount: 1000, status: 'open', payee: { id: 'g', name: 'G' }, allowPartial: true };
    const invoice = async () => (await app.inject({ method: 'GET', url: '/mof/api/invoices/MOF-PART' })).json<{ data: { totalAmount: number; paymentStatus: string } }>().data;
    const submit = (paymentId: string, amount: number) => post('/mof/api/payments', { paymentId, invoiceNo: 'MOF-PART', amount });

    it('refuses an amount that is not the balance, in each source format', async () => {
      const refused = 'amount does not match the invoice balance';
      expect((await post('/mof/api/payments', { paymentId: 'm', invoiceNo: 'MOF-T001', amount: 11999.99 })).json()).toEqual({
        data: { paymentId: 'm', accepted: false, rejectReason: refused },
      });
      const etax = await post('/etax/v2/payments', { payment_id: 'e', bill_no: 'ET9001', paid_amount: '0.01' });
      expect([etax.statusCode, etax.json()]).toEqual([422, { error_code: 'E_REJECTED', error_msg: refused }]);
      const police = await post('/police/api/payments', { PAYMENT_ID: 'p', FINE_NO: 'P-9001', PAY_AMOUNT: 1 });
      expect(police.json()).toEqual({ RESULT_CODE: 2001, RESULT_MSG: refused });
      expect(await listPayments()).toEqual([]);
    });

    it('takes a part-payment when the invoice allows it, and keeps the rest owed', async () => {
      await post('/__control/invoices', partial);
      expect((await submit('over', 1000.01)).json()).toMatchObject({ data: { accepted: false } });
      expect((await submit('part', 300)).json()).toMatchObject({ data: { accepted: true } });
      expect((await submit('while-held', 700)).json()).toMatchObject({ data: { accepted: false, rejectReason: 'payment already in progress' } });
      await post('/__control/approve', { refNum: 'MOF-PART' });
      expect(await invoice()).toMatchObject({ totalAmount: 700, paymentStatus: 'UNPAID' });
      expect((await submit('rest', 700)).json()).toMatchObject({ data: { accepted: true } });
      await post('/__control/approve', { refNum: 'MOF-PART' });
      expect(await invoice()).toMatchObject({ totalAmount: 700, paymentStatus: 'PAID' });
      const day = (await listPayments())[0]?.confirmedAt ?? '';
      const settled = (await app.inject({ method: 'GET', url: `/mof/api/settlements/${financeDayOf(new Date(day))}` })).json<{ data: { paymentId: string; amount: number }[] }>();
      expect(settled.data.map((e) => [e.paymentId, e.amount]).sort()).toEqual([['part', 300], ['rest', 700]]);
    });

    it('a reversal owes its amount again', async () => {
      await post('/__control/invoices', partial);
      await submit('part', 300);
      await post('/__control/approve', { refNum: 'MOF-PART' });
      await submit('rest', 700);
      await post('/__control/approve', { refNum: 'MOF-PART' });
      await post('/mof/api/payments/part/cancel', {});
      expect(await invoice()).toMatchObject({ totalAmount: 300, paymentStatus: 'UNPAID' });
      await post('/mof/api/payments/rest/cancel', {});
      expect(await invoice()).toMatchObject({ totalAmount: 1000, paymentStatus: 'UNPAID' });
    });
  });

  describe('holds on linked invoices', () => {
    // G pays B; then F pays A, which the ministry settles together with B, and is accepted anyway.
    const holdBothWays = async () => {
      expect((await post('/mof/api/payments', { paymentId: 'G', invoiceNo: 'MOF-T002', amount: 300 })).json()).toMatchObject({
        data: { accepted: true },
      });
      expect((await post('/mof/api/payments', { paymentId: 'F', invoiceNo: 'MOF-T001', amount: 12000 })).json()).toMatchObject({
        data: { accepted: true, linkedInvoices: ['MOF-T002'] },
      });
    };

    it('a payment linking an invoice another payment holds leaves that hold alone', async () => {
      await holdBothWays();
      const approved = await post('/__control/approve', { refNum: 'MOF-T002' });
      expect(approved.statusCode).toBe(200);
      expect(approved.json()).toMatchObject({ approved: { paymentId: 'G' } });
    });

    it("canceling the linking payment neither frees the other's invoice nor reopens what it paid", async () => {
      await holdBothWays();
      await post('/mof/api/payments/F/cancel', {});
      const third = await post('/mof/api/payments', { paymentId: 'H', invoiceNo: 'MOF-T002', amount: 300 });
      expect(third.json()).toMatchObject({ data: { accepted: false, rejectReason: 'payment already in progress' } });
      await post('/__control/approve', { refNum: 'MOF-T002' });
      await post('/mof/api/payments/F/cancel', {});
      const invoice = await app.inject({ method: 'GET', url: '/mof/api/invoices/MOF-T002' });
      expect(invoice.json()).toMatchObject({ data: { paymentStatus: 'PAID' } });
    });

    it('canceling a submitted payment leaves the invoices as they were; a reversal reopens them', async () => {
      await holdBothWays();
      await post('/__control/approve', { refNum: 'MOF-T002' });
      await post('/mof/api/payments/F/cancel', {});
      const status = async (no: string) =>
        (await app.inject({ method: 'GET', url: `/mof/api/invoices/${no}` })).json<{ data: { paymentStatus: string } }>().data.paymentStatus;
      expect([await status('MOF-T001'), await status('MOF-T002')]).toEqual(['UNPAID', 'PAID']);
      await post('/mof/api/payments/G/cancel', {});
      expect(await status('MOF-T002')).toBe('UNPAID');
    });
  });

  describe('faults scoped to one operation', () => {
    const call = (url: string, method: 'GET' | 'POST' = 'GET') => app.inject({ method, url, payload: method === 'POST' ? {} : undefined });

    it('refuses an unknown operation', async () => {
      expect((await post('/__control/faults', { source: 'mof', mode: 'error', operation: 'refund' })).statusCode).toBe(400);
    });

    it('takes a loaded fault, whose delay grows with the requests in flight, and answers once it has waited', async () => {
      const set = await post('/__control/faults', { source: 'mof', mode: 'loaded', perInFlightMs: 5, operation: 'invoice' });
      expect(set.json()).toEqual({ source: 'mof', operation: 'invoice', mode: 'loaded', delayMs: 0, perInFlightMs: 5 });
      const answers = await Promise.all([1, 2, 3].map(() => call('/mof/api/invoices/MOF-T001')));
      expect(answers.map((r) => r.statusCode)).toEqual([200, 200, 200]);
      expect((await post('/__control/faults', { source: 'mof', mode: 'loaded', perInFlightMs: -1 })).statusCode).toBe(400);
      await post('/__control/faults', { source: 'mof', mode: 'none' });
    });

    it('breaks only that operation of that source', async () => {
      await post('/mof/api/payments', { paymentId: 'op', invoiceNo: 'MOF-T002', amount: 300 });
      const set = await post('/__control/faults', { source: 'mof', mode: 'error', operation: 'cancel' });
      expect(set.json()).toMatchObject({ source: 'mof', operation: 'cancel', mode: 'error' });
      expect((await call('/mof/api/payments/op/cancel', 'POST')).statusCode).toBe(500);
      expect((await call('/mof/api/payments/op')).json()).toMatchObject({ data: { state: 'PENDING' } });
      expect((await call('/mof/api/invoices/MOF-T001')).statusCode).toBe(200);
      expect((await call('/etax/v2/payments/op/cancel', 'POST')).json()).toMatchObject({ error_code: 'E_NOT_FOUND' });
    });

    it('tags every route with its operation', async () => {
      const routes: [string, string, 'GET' | 'POST'][] = [
        ['search', '/etax/v2/bills?tin=7000001', 'GET'],
        ['invoice', '/etax/v2/bills/ET9001', 'GET'],
        ['submit', '/etax/v2/payments', 'POST'],
        ['status', '/etax/v2/payments/x', 'GET'],
        ['cancel', '/etax/v2/payments/x/cancel', 'POST'],
        ['settlement', '/etax/v2/settlement?finance_day=2025-01-01', 'GET'],
      ];
      for (const [operation] of routes) {
        await post('/__control/faults', { source: 'etax', mode: 'error', operation });
        const answers = await Promise.all(routes.map(([, url, method]) => call(url, method)));
        expect(answers.map((response) => response.statusCode === 500)).toEqual(routes.map(([name]) => name === operation));
        await post('/__control/faults', { source: 'etax', mode: 'none', operation });
      }
    });

    it("an operation's own entry wins over the source-wide fault, which replaces them all when set", async () => {
      await post('/__control/faults', { source: 'police', mode: 'error' });
      await post('/__control/faults', { source: 'police', mode: 'none', operation: 'invoice' });
      expect((await call('/police/api/fines/P-9001')).statusCode).toBe(200);
      expect((await call('/police/api/payments/x')).statusCode).toBe(500);
      await post('/__control/faults', { source: 'police', mode: 'error' });
      expect((await call('/police/api/fines/P-9001')).statusCode).toBe(500);
      await post('/__control/faults', { source: 'police', mode: 'malformed', operation: 'status' });
      await post('/__control/faults', { source: 'police', mode: 'none' });
      expect((await call('/police/api/fines/P-9001')).statusCode).toBe(200);
      expect((await call('/police/api/payments/x')).json()).toMatchObject({ RESULT_CODE: 404 });
    });
  });

  it('keeps amounts exact in möngö: decimal submits and settlement round-trip', async () => {
    await post('/etax/v2/payments', { payment_id: 'm1', bill_no: 'ET9001', paid_amount: '12000.25' });
    await post('/__control/approve', { refNum: 'ET9001', source: 'etax' });
    const [payment] = await listPayments();
    expect(payment).toMatchObject({ paymentId: 'm1', amount: '12000.25', status: 'confirmed' });
  });

  it('refuses a submit whose amount has more than 2 decimals as a bad request', async () => {
    const response = await post('/mof/api/payments', { paymentId: 'x', invoiceNo: 'MOF-T002', amount: 1.005 });
    expect(response.statusCode).toBe(400);
    expect(await listPayments()).toEqual([]);
  });
});

describe('simulator lifecycle', () => {
  let app: FastifyInstance | undefined;
  afterEach(async () => {
    await app?.close();
    app = undefined;
  });

  it('auto-approves a submitted payment after autoApproveMs', async () => {
    app = await buildSimulator({ fixtures: await loadFixtures(TEST_FIXTURES), autoApproveMs: 30 });
    const running = app;
    await running.inject({ method: 'POST', url: '/mof/api/payments', payload: { paymentId: 'auto', invoiceNo: 'MOF-T002', amount: 300 } });
    await vi.waitFor(async () => {
      const payment = await running.inject({ method: 'GET', url: '/mof/api/payments/auto' });
      expect(payment.json()).toMatchObject({ data: { state: 'APPROVED' } });
    });
    const invoice = await running.inject({ method: 'GET', url: '/mof/api/invoices/MOF-T002' });
    expect(invoice.json()).toMatchObject({ data: { paymentStatus: 'PAID' } });
  });

  it("treats an invoice's payments as its behaviour says: approved after a delay with auto-approval off, failed, never approved, or refused while down", async () => {
    app = await buildSimulator({ fixtures: await loadFixtures(TEST_FIXTURES), autoApproveMs: 0 });
    const running = app;
    const behave = (payload: object) => running.inject({ method: 'POST', url: '/__control/invoices/behaviour', payload });
    const submit = (paymentId: string, invoiceNo: string, amount: number) =>
      running.inject({ method: 'POST', url: '/mof/api/payments', payload: { paymentId, invoiceNo, amount } });
    const state = async (paymentId: string) => (await running.inject({ method: 'GET', url: `/mof/api/payments/${paymentId}` })).json<{ data: { state: string } }>().data.state;

    expect((await behave({ refNum: 'NOPE', approveAfterSeconds: 1 })).statusCode).toBe(404);
    expect((await behave({ refNum: 'MOF-T002', approveAfterSeconds: -1 })).statusCode).toBe(400);
    expect((await behave({ refNum: 'MOF-T002', approveAfterSeconds: 0.05, source: 'mof' })).statusCode).toBe(200);
    await submit('later', 'MOF-T002', 300);
    await vi.waitFor(async () => expect(await state('later')).toBe('APPROVED'));

    expect((await behave({ refNum: 'MOF-T001', failAfterSeconds: 0.05, source: 'mof' })).statusCode).toBe(200);
    await submit('failing', 'MOF-T001', 12000);
    await vi.waitFor(async () => expect(await state('failing')).toBe('REJECTED'));

    expect((await behave({ refNum: 'MOF-T001', neverApprove: true, unavailableSeconds: 3600, source: 'mof' })).statusCode).toBe(200);
    expect((await submit('down', 'MOF-T001', 12000)).statusCode).toBe(500);
    // Down to questions about that payment too, while the window lasts.
    expect(await running.inject({ method: 'GET', url: '/mof/api/payments/down' }).then((r) => r.statusCode)).toBe(500);
    expect((await behave({ refNum: 'MOF-T001', neverApprove: true, source: 'mof' })).statusCode).toBe(200);
    expect((await submit('never', 'MOF-T001', 12000)).json()).toMatchObject({ data: { accepted: true } });
    expect((await running.inject({ method: 'POST', url: '/__control/approve', payload: { refNum: 'MOF-T001' } })).statusCode).toBe(404);
    expect(await state('never')).toBe('PENDING');
  });

  it('closes while a timeout fault holds a request, and the held client is cut off', async () => {
    app = await buildSimulator({ fixtures: await loadFixtures(TEST_FIXTURES), autoApproveMs: 60_000 });
    const url = await app.listen({ host: '127.0.0.1', port: 0 });
    await app.inject({ method: 'POST', url: '/__control/faults', payload: { source: 'etax', mode: 'timeout' } });
    await app.inject({ method: 'POST', url: '/mof/api/payments', payload: { paymentId: 't', invoiceNo: 'MOF-T002', amount: 300 } });
    let arrived = 0;
    app.server.on('request', () => arrived++);
    const held = fetch(`${url}/etax/v2/bills/ET9001`).then(
      (response) => response.status,
      () => 'cut off',
    );
    // Close only once the request is in the server, where the timeout fault holds it.
    await expect.poll(() => arrived).toBe(1);
    await app.close();
    app = undefined;
    expect(['cut off', 503, 504]).toContain(await held);
  });
});
