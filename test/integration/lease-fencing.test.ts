import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestContext, type TestContext } from '../helpers/test-context.js';
import { partnerWithPayment } from '../helpers/api.js';
import { createPaymentRepository } from '../../src/payments/payment.repository.js';
import { createMinistryCancellationRepository } from '../../src/payments/ministry-cancellation.repository.js';
import { createReconciliationRepository, type DiscrepancyWrite } from '../../src/db/repositories/reconciliation.repository.js';
import { unitOfWorkRunner } from '../../src/db/unit-of-work.js';

/*
 * A holder that stalls past its lease (a long GC pause, a frozen VM) and wakes after another
 * instance took the work must change nothing of the newer holder's. Each test is two holders of
 * one row on the service's own database, with the clock moved past the first one's lease.
 */
let ctx: TestContext;
const LEASE_MS = 10_000;

beforeAll(async () => {
  ctx = await createTestContext();
});
afterAll(() => ctx.close());

const later = (ms: number) => new Date(ctx.now().getTime() + ms);

describe('a stale holder can do no harm', () => {
  it('confirmation check: a late reschedule is refused once another instance has claimed the payment', async () => {
    const { payment } = await partnerWithPayment(ctx, 'police');
    const payments = createPaymentRepository(ctx.deps.db, ctx.now);
    const first = (await payments.claimDue(later(1), later(LEASE_MS), { police: 100 })).find((p) => p.id === payment.id);
    expect(first).toBeDefined();
    ctx.advance(LEASE_MS + 1);
    const secondLease = later(LEASE_MS);
    const second = (await payments.claimDue(later(1), secondLease, { police: 100 })).find((p) => p.id === payment.id);
    expect(second?.check_attempts).toBe((first?.check_attempts ?? 0) + 1);

    expect(await payments.reschedule(payment.id, later(1), first?.check_attempts ?? -1)).toBe(false);
    const row = await ctx.deps.db.selectFrom('payments').select('next_check_at').where('id', '=', payment.id).executeTakeFirstOrThrow();
    expect(row.next_check_at?.getTime()).toBe(secondLease.getTime());
    expect(await payments.reschedule(payment.id, later(5000), second?.check_attempts ?? -1)).toBe(true);
  });

  it('ministry cancellation: a late failure does not overwrite the newer attempt', async () => {
    const { payment, invoice } = await partnerWithPayment(ctx, 'etax');
    const cancellations = createMinistryCancellationRepository(ctx.deps.db);
    await unitOfWorkRunner(ctx.deps.db)((uow) => cancellations.add(uow, { paymentId: payment.id, source: 'etax', refNum: invoice.refNum, reason: 'test', dueAt: ctx.now() }));
    const first = (await cancellations.claimDue(later(1), later(LEASE_MS), { etax: 100 })).find((r) => r.payment_id === payment.id);
    ctx.advance(LEASE_MS + 1);
    const secondLease = later(LEASE_MS);
    const second = (await cancellations.claimDue(later(1), secondLease, { etax: 100 })).find((r) => r.payment_id === payment.id);
    expect(first && second).toBeTruthy();

    expect(await cancellations.markFailed(payment.id, 'late', later(1), first?.attempts ?? -1)).toBe(false);
    const row = await cancellations.find(payment.id);
    expect(row?.last_error).toBeNull();
    expect(row?.next_attempt_at.getTime()).toBe(secondLease.getTime());
    expect(await cancellations.markFailed(payment.id, 'current', later(5000), second?.attempts ?? -1)).toBe(true);
  });

  it('reconciliation: a stale run neither renews, records, clears nor releases the newer run', async () => {
    const recon = createReconciliationRepository(ctx.deps.db);
    const day = '2001-02-03';
    await recon.ensureSources(day, ['mof'], ctx.now());
    const stale = await recon.acquire(day, 'mof', ctx.now(), later(LEASE_MS));
    expect(stale).not.toBeNull();
    // Held: nobody else gets it.
    expect(await recon.acquire(day, 'mof', ctx.now(), later(LEASE_MS))).toBeNull();
    ctx.advance(LEASE_MS + 1);
    const current = await recon.acquire(day, 'mof', ctx.now(), later(LEASE_MS));
    expect(current?.token).toBeDefined();
    expect(current?.token).not.toBe(stale?.token);
    if (!stale || !current) return;

    const finding = (paymentId: string): DiscrepancyWrite => ({
      kind: 'missing_locally',
      financeDay: day,
      source: 'mof',
      refNum: `R-${paymentId.slice(0, 8)}`,
      paymentId,
      partnerId: null,
      localAmount: null,
      ministryAmount: '10',
    });
    const currentRun = await recon.createRun(day, null, ctx.now());
    const staleRun = await recon.createRun(day, null, ctx.now());
    expect(await recon.recordFindings(current, currentRun, [finding('0b4f1a52-7c51-4a8e-9b6e-3d2f58a1c001')], ctx.now())).toEqual({ recorded: 1, cleared: 0 });

    // The stale run wakes: it would add its own finding and clear the newer run's as no longer found.
    expect(await recon.renewLease(stale, later(LEASE_MS))).toBe(false);
    expect(await recon.recordFindings(stale, staleRun, [finding('0b4f1a52-7c51-4a8e-9b6e-3d2f58a1c002')], ctx.now())).toBeNull();
    expect(await recon.release(stale, { now: ctx.now(), error: null, retryAt: ctx.now() })).toBe(false);

    const open = await ctx.deps.db.selectFrom('discrepancies').select(['payment_id', 'status', 'run_id']).where('finance_day', '=', day).execute();
    expect(open).toEqual([{ payment_id: '0b4f1a52-7c51-4a8e-9b6e-3d2f58a1c001', status: 'open', run_id: currentRun }]);
    const hold = await ctx.deps.db.selectFrom('reconciliation_sources').select(['lease_token', 'status']).where('finance_day', '=', day).executeTakeFirstOrThrow();
    expect(hold).toEqual({ lease_token: current.token, status: 'pending' });
    expect(await recon.renewLease(current, later(LEASE_MS))).toBe(true);
    expect(await recon.release(current, { now: ctx.now(), error: null, retryAt: ctx.now() })).toBe(true);
  });
});
