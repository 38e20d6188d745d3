import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import { createTestContext, type TestContext } from '../helpers/test-context.js';
import { checkInvariants, kyselyRunner } from '../helpers/invariants.js';
import type { InvoiceFixture } from '../../simulator/fixtures.schema.js';

/**
 * One slow ministry system must not delay another's confirmations: with 50 payments waiting at a
 * slow etax, a payment approved at mof is confirmed by the first job pass, while etax's checks are
 * still in flight and never more of them than etax's share.
 */
const WAITING = 50;
const SLOW_MS = 1500;
const REGISTER = '8200002';
let ctx: TestContext;

beforeAll(async () => {
  // Few slots, so the backlog below outnumbers them without many payments.
  ctx = await createTestContext({ config: { ministryTimeoutMs: 5000, confirmConcurrencyPerSource: 4 } });
});
// A test that fails while etax is slow must not leave it slow for the next one.
afterEach(async () => {
  await ctx.sim('/__control/faults', { source: 'etax', mode: 'none' });
});
afterAll(() => ctx.close());

function fixture(source: 'mof' | 'etax', refNum: string): InvoiceFixture {
  return {
    source,
    refNum,
    description: 'fairness',
    amount: 500,
    status: 'open',
    dueDate: null,
    issuedAt: null,
    payer: { register: REGISTER, name: 'Fairness' },
    payee: { id: 'ORG-1', name: 'Org' },
  };
}

it('confirms an approval at a healthy system while a slow system has 50 payments waiting', async () => {
  const etaxRefs = Array.from({ length: WAITING }, (_, i) => `FAIR-ET-${i}`);
  await ctx.sim('/__control/invoices', { invoices: [...etaxRefs.map((r) => fixture('etax', r)), fixture('mof', 'FAIR-MOF')] });
  const { apiKey } = await ctx.partner();
  const found = (await ctx.api(apiKey, { method: 'GET', url: `/api/v1/invoices?ttd=${REGISTER}` })).json<{ invoices: { id: string; description: string }[] }>();
  expect(found.invoices).toHaveLength(WAITING + 1);
  const mofInvoice = (await ctx.api(apiKey, { method: 'GET', url: '/api/v1/invoices/ref/FAIR-MOF' })).json<{ id: string }>().id;

  const pay = (invoiceId: string) => ctx.api(apiKey, { method: 'POST', url: '/api/v1/payments', payload: { invoiceId } });
  const etaxInvoices = found.invoices.map((i) => i.id).filter((id) => id !== mofInvoice);
  const etaxPayments = await Promise.all(etaxInvoices.map(async (id) => (await pay(id)).json<{ id: string; status: string }>()));
  expect(etaxPayments.every((p) => p.status === 'submitted')).toBe(true);

  await ctx.sim('/__control/faults', { source: 'etax', mode: 'slow', delayMs: SLOW_MS });
  const mofPayment = (await pay(mofInvoice)).json<{ id: string }>();
  expect((await ctx.sim('/__control/approve', { refNum: 'FAIR-MOF' })).statusCode).toBe(200);

  const job = ctx.deps.jobs.find((j) => j.name === 'payment-confirmation');
  if (!job) throw new Error('no confirmation job');
  const passAt = ctx.now().getTime();
  await job.run();
  const status = async () => (await ctx.deps.db.selectFrom('payments').select('status').where('id', '=', mofPayment.id).executeTakeFirstOrThrow()).status;
  // Bounded only so a regression fails instead of hanging; the assertions below are about order.
  await expect.poll(status, { timeout: 5000, interval: 50 }).toBe('confirmed');

  const etax = await ctx.deps.db
    .selectFrom('payments')
    .select(['id', 'check_attempts', 'next_check_at'])
    .where('id', 'in', etaxPayments.map((p) => p.id))
    .execute();
  const claimed = etax.filter((p) => p.check_attempts > 0);
  expect(claimed).toHaveLength(ctx.config.confirmConcurrencyPerSource);
  // Still leased: none of etax's checks had an answer when mof's payment was confirmed.
  const leaseFloor = passAt + ctx.config.confirmPollMs;
  expect(claimed.every((p) => (p.next_check_at?.getTime() ?? 0) > leaseFloor)).toBe(true);

  // A second pass while etax's slots are full claims nothing more of etax.
  await job.run();
  const again = await ctx.deps.db.selectFrom('payments').select('check_attempts').where('id', 'in', etaxPayments.map((p) => p.id)).execute();
  expect(again.filter((p) => p.check_attempts > 0)).toHaveLength(ctx.config.confirmConcurrencyPerSource);

  // Once etax answers quickly again, the freed slots take the rest of its backlog (all due by
  // now) without waiting for a pass.
  ctx.advance(ctx.config.confirmPollMs);
  await ctx.sim('/__control/faults', { source: 'etax', mode: 'none' });
  await job.drain?.();
  const checked = await ctx.deps.db.selectFrom('payments').select('check_attempts').where('id', 'in', etaxPayments.map((p) => p.id)).execute();
  expect(checked.every((p) => p.check_attempts > 0)).toBe(true);
  expect(await checkInvariants(kyselyRunner(ctx.deps.db))).toEqual([]);
});

it('confirms a backlog larger than its slots in one pass, claiming again as each slot frees', async () => {
  const refs = Array.from({ length: 12 }, (_, i) => `BACKLOG-MOF-${i}`);
  await ctx.sim('/__control/invoices', { invoices: refs.map((r) => ({ ...fixture('mof', r), payer: { register: '8200003', name: 'Backlog' } })) });
  const { apiKey } = await ctx.partner();
  const found = (await ctx.api(apiKey, { method: 'GET', url: '/api/v1/invoices?ttd=8200003' })).json<{ invoices: { id: string }[] }>();
  const payments = await Promise.all(
    found.invoices.map(async (i) => (await ctx.api(apiKey, { method: 'POST', url: '/api/v1/payments', payload: { invoiceId: i.id } })).json<{ id: string }>()),
  );
  for (const ref of refs) expect((await ctx.sim('/__control/approve', { refNum: ref })).statusCode).toBe(200);
  expect(refs.length).toBeGreaterThan(2 * ctx.config.confirmConcurrencyPerSource);

  const job = ctx.deps.jobs.find((j) => j.name === 'payment-confirmation');
  if (!job) throw new Error('no confirmation job');
  await job.run();
  await job.drain?.();
  const rows = await ctx.deps.db.selectFrom('payments').select('status').where('id', 'in', payments.map((p) => p.id)).execute();
  expect(rows.map((r) => r.status)).toEqual(refs.map(() => 'confirmed'));
});
