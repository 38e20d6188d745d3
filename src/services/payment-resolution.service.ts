import { amountToNumber } from '../domain/money.js';
import { isExpired } from '../domain/check-schedule.js';
import type { PaymentEvent } from '../domain/payment-transitions.js';
import type { InvoiceRepository } from '../db/repositories/invoice.repository.js';
import type { PaymentRepository, PaymentRow } from '../db/repositories/payment.repository.js';
import type { EventRepository } from '../db/repositories/event.repository.js';
import type { MinistryAdapters, UpstreamPaymentState, Source } from '../ministry/ministry.types.js';
import type { InvoiceCache } from './invoice-cache.js';
import type { PaymentSubmitter } from './payment-submit.service.js';

export interface PaymentResolverDeps {
  payments: PaymentRepository;
  invoices: InvoiceRepository;
  invoiceCache: InvoiceCache;
  events: EventRepository;
  ministries: MinistryAdapters;
  submitter: PaymentSubmitter;
  /** A submitted payment still unpaid this long after submission is canceled at the ministry. */
  expiryMs: number;
  now?: () => Date;
}

/** Why the service ended a payment the ministry ended, for the partner's failure reason. */
const MINISTRY_ENDED: Partial<Record<PaymentEvent, string>> = {
  ministry_rejected: 'The ministry system rejected the payment',
  ministry_forgot: 'The ministry system has no record of the payment',
};

/**
 * Brings a pending or submitted payment up to date with its ministry: every answer moves it by
 * the transition table, so no payment stays unresolved for ever or holds invoices it cannot pay.
 */
export function createPaymentResolver(deps: PaymentResolverDeps) {
  const now = deps.now ?? (() => new Date());

  async function confirm(payment: PaymentRow, confirmedAt: string | null): Promise<void> {
    const paidAt = confirmedAt ? new Date(confirmedAt) : now();
    const outbox = deps.events.outbox({ event: 'payment.confirmed', data: { id: payment.id, amount: amountToNumber(payment.amount) } });
    const paid = await deps.payments.markConfirmed({ id: payment.id, at: now(), paidAt, outbox });
    // After the commit: a read between a forget and the commit would cache the old row again.
    deps.invoiceCache.forget(paid ?? []);
  }

  /** Ends an unconfirmed payment and releases its invoices; they were never paid by it. */
  async function end(payment: PaymentRow, event: PaymentEvent): Promise<void> {
    const at = now();
    const reason = MINISTRY_ENDED[event];
    await deps.payments.transaction(async (trx) => {
      const moved = await deps.payments.move(trx, payment.id, event, at, reason ? { failureReason: reason } : { canceledAt: at });
      if (moved) await deps.payments.releaseInvoices(trx, payment.id, null);
    });
  }

  /** A pending payment is submitted again, which needs its whole invoice. */
  async function resubmit(payment: PaymentRow, state: UpstreamPaymentState): Promise<void> {
    if (state.status === 'unknown') return void (await deps.submitter.neverReceived(payment));
    const invoice = await deps.invoices.findById(payment.invoice_id);
    if (invoice) await deps.submitter.submit(payment, invoice);
  }

  /**
   * Asks the ministry about the payment (by `refNum` when the caller has it, else its invoice's)
   * and moves it by the answer. Resolves to whether the payment may still be unresolved: a
   * confirmed or ended payment needs no further check.
   */
  async function check(payment: PaymentRow, refNum?: string): Promise<'resolved' | 'unresolved'> {
    const ref = refNum ?? (await deps.invoices.findById(payment.invoice_id))?.ref_num;
    if (ref === undefined) return 'unresolved';
    const adapter = deps.ministries[payment.source as Source];
    const state = await adapter.getPayment({ paymentId: payment.id, refNum: ref });
    if (payment.status === 'pending') {
      await resubmit(payment, state);
      return 'unresolved';
    }
    if (payment.status !== 'submitted') return 'resolved';
    switch (state.status) {
      case 'confirmed':
        await confirm(payment, state.confirmedAt);
        return 'resolved';
      case 'canceled':
        await end(payment, 'ministry_canceled');
        return 'resolved';
      case 'rejected':
        await end(payment, 'ministry_rejected');
        return 'resolved';
      case 'unknown':
        await end(payment, 'ministry_forgot');
        return 'resolved';
      case 'submitted':
        if (!isExpired(payment.submitted_at, now(), deps.expiryMs)) return 'unresolved';
        // The ministry first: once it has canceled, the citizen can no longer pay this payment.
        await adapter.cancelPayment({ paymentId: payment.id, refNum: ref });
        await end(payment, 'expired');
        return 'resolved';
    }
  }

  return { check };
}

export type PaymentResolver = ReturnType<typeof createPaymentResolver>;
