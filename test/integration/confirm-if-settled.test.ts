import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestContext, type TestContext } from '../helpers/test-context.js';
import { partnerWithInvoice, payOk } from '../helpers/api.js';
import { checkInvariants, kyselyRunner } from '../helpers/invariants.js';
import { createPaymentRepository } from '../../src/payments/payment.repository.js';
import { createOutbox } from '../../src/db/outbox.statements.js';

/*
 * The confirmation's one-statement path: a payment that leaves its invoice owing nothing by our
 * books is confirmed, its invoice paid and its event written in one statement; one that leaves a
 * balance is left for the part-payment path, untouched, with what the books leave owing.
 */

describe('PaymentRepository.markConfirmedIfSettled', () => {
  let ctx: TestContext;
  beforeAll(async () => {
    ctx = await createTestContext();
  });
  afterAll(() => ctx.close());

  function confirmIfSettled(payment: { id: string; amount: number }) {
    const payments = createPaymentRepository(ctx.deps.db, ctx.now);
    const outbox = createOutbox({ now: ctx.now }).outbox({ event: 'payment.confirmed', data: { id: payment.id, amount: payment.amount, partnerReference: null } });
    return payments.markConfirmedIfSettled({ id: payment.id, at: ctx.now(), paidAt: ctx.now(), outbox, why: { cause: 'confirmation_job' } });
  }

  async function state(paymentId: string, invoiceId: string) {
    const { rows } = await sql<{ payment: string; invoice: string; events: string[] }>`
      SELECT p.status AS payment, i.status AS invoice,
        coalesce((SELECT array_agg(e.event ORDER BY e.event) FROM events e WHERE e.payment_id = p.id), '{}') AS events
      FROM payments p JOIN invoices i ON i.id = ${invoiceId}::uuid WHERE p.id = ${paymentId}::uuid`.execute(ctx.deps.db);
    return rows[0];
  }

  it('confirms a payment of the whole balance, pays its invoice and writes its event; a second call finds it moved', async () => {
    const { partner, invoice } = await partnerWithInvoice(ctx, 'mof', { amount: 1000 });
    const payment = await payOk(ctx, partner.apiKey, { invoiceId: invoice.id });

    expect(await confirmIfSettled(payment)).toEqual([invoice.id]);
    expect(await state(payment.id, invoice.id)).toEqual({ payment: 'confirmed', invoice: 'paid', events: ['payment.confirmed', 'payment.submitted'] });
    expect(await confirmIfSettled(payment)).toBeNull();
    expect(await checkInvariants(kyselyRunner(ctx.deps.db))).toEqual([]);
  });

  it('leaves a part-payment submitted, its invoice open and no event written, and says what the books leave owing', async () => {
    const { partner, invoice } = await partnerWithInvoice(ctx, 'etax', { amount: 1000, allowPartial: true });
    const payment = await payOk(ctx, partner.apiKey, { invoiceId: invoice.id, amount: 400 });

    expect(await confirmIfSettled(payment)).toEqual({ owed: '600.00' });
    expect(await state(payment.id, invoice.id)).toEqual({ payment: 'submitted', invoice: 'open', events: ['payment.submitted'] });
    expect(await checkInvariants(kyselyRunner(ctx.deps.db))).toEqual([]);
  });

  it('is null for a payment it does not know', async () => {
    expect(await confirmIfSettled({ id: '00000000-0000-4000-8000-000000000000', amount: 1 })).toBeNull();
  });
});
