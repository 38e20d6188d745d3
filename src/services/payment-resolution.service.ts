import { amountToNumber } from '../domain/money.js';
import { isExpired } from '../domain/check-schedule.js';
import type { PaymentEvent } from '../domain/payment-transitions.js';
import type { InvoiceRepository } from '../db/repositories/invoice.repository.js';
import type { PaymentRepository, PaymentRow } from '../db/repositories/payment.repository.js';
import type { EventRepository } from '../db/repositories/event.repository.js';
import type { MinistryAdapters, Source } from '../ministry/ministry.types.js';
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
    const paid = await deps.payments.transaction(async (trx) => {
      const moved = await deps.payments.move(trx, payment.id, 'ministry_approved', now(), { paidAt });
      if (!moved) return [];
      const ids = await deps.payments.markInvoicesPaid(trx, payment.id);
      await deps.events.append(trx, payment.partner_id, { event: 'payment.confirmed', data: { id: payment.id, amount: amountToNumber(payment.amount) } });
      return ids;
    });
    // After the commit: a read between a forget and the commit would cache the old row again.
    deps.invoiceCache.forget(paid);
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

  async function check(payment: PaymentRow): Promise<void> {
    const invoice = await deps.invoices.findById(payment.invoice_id);
    if (!invoice) return;
    const ref = { paymentId: payment.id, refNum: invoice.ref_num };
    const adapter = deps.ministries[payment.source as Source];
    const state = await adapter.getPayment(ref);
    if (payment.status === 'pending') {
      if (state.status === 'unknown') await deps.submitter.neverReceived(payment);
      else await deps.submitter.submit(payment, invoice);
      return;
    }
    if (payment.status !== 'submitted') return;
    switch (state.status) {
      case 'confirmed':
        return confirm(payment, state.confirmedAt);
      case 'canceled':
        return end(payment, 'ministry_canceled');
      case 'rejected':
        return end(payment, 'ministry_rejected');
      case 'unknown':
        return end(payment, 'ministry_forgot');
      case 'submitted':
        if (!isExpired(payment.submitted_at, now(), deps.expiryMs)) return;
        // The ministry first: once it has canceled, the citizen can no longer pay this payment.
        await adapter.cancelPayment(ref);
        return end(payment, 'expired');
    }
  }

  return { check };
}

export type PaymentResolver = ReturnType<typeof createPaymentResolver>;
