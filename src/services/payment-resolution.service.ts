import { amountToNumber } from '../domain/money.js';
import { isExpired } from '../domain/check-schedule.js';
import type { PaymentEvent } from '../domain/payment-transitions.js';
import type { InvoiceRepository } from '../db/repositories/invoice.repository.js';
import type { PaymentRepository, PaymentRow } from '../db/repositories/payment.repository.js';
import type { EventRepository } from '../db/repositories/event.repository.js';
import type { MinistryAdapters } from '../adapters/ministry/ministry.types.js';
import type { PaymentSubmitter } from './payment-submit.service.js';
import { systemClock, type Clock } from '../domain/clock.port.js';

export interface PaymentResolverDeps {
  payments: PaymentRepository;
  invoices: InvoiceRepository;
  events: EventRepository;
  ministries: MinistryAdapters;
  submitter: PaymentSubmitter;
  /** A submitted payment still unpaid this long after submission is canceled at the ministry. */
  expiryMs: number;
  now?: Clock;
}

/** The move for each way the ministry can end a submitted payment. */
const MINISTRY_ENDS = { canceled: 'ministry_canceled', rejected: 'ministry_rejected', unknown: 'ministry_forgot' } as const satisfies Record<string, PaymentEvent>;

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
  const now = deps.now ?? systemClock;

  async function confirm(payment: PaymentRow, confirmedAt: string | null): Promise<void> {
    const paidAt = confirmedAt ? new Date(confirmedAt) : now();
    const outbox = deps.events.outbox({ event: 'payment.confirmed', data: { id: payment.id, amount: amountToNumber(payment.amount) } });
    await deps.payments.markConfirmed({ id: payment.id, at: now(), paidAt, outbox });
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

  /**
   * Asks the ministry about the payment (by `refNum` when the caller has it, else its invoice's)
   * and moves it by the answer. Resolves to whether the payment may still be unresolved: a
   * confirmed or ended payment needs no further check.
   */
  async function check(payment: PaymentRow, refNum?: string): Promise<'resolved' | 'unresolved'> {
    // A pending payment is submitted again, which needs its whole invoice; a submitted one, its refNum.
    const invoice = refNum === undefined || payment.status === 'pending' ? await deps.invoices.findById(payment.invoice_id) : null;
    const ref = refNum ?? invoice?.ref_num;
    if (ref === undefined) return 'unresolved';
    const adapter = deps.ministries[payment.source];
    const state = await adapter.getPayment({ paymentId: payment.id, refNum: ref });
    if (payment.status === 'pending') {
      if (state.status === 'unknown') await deps.submitter.neverReceived(payment);
      else if (invoice) await deps.submitter.submit(payment, invoice);
      return 'unresolved';
    }
    if (payment.status !== 'submitted') return 'resolved';
    if (state.status === 'confirmed') {
      await confirm(payment, state.confirmedAt);
      return 'resolved';
    }
    if (state.status === 'submitted') {
      if (!isExpired(payment.submitted_at, now(), deps.expiryMs)) return 'unresolved';
      // The ministry first: once it has canceled, the citizen can no longer pay this payment.
      await adapter.cancelPayment({ paymentId: payment.id, refNum: ref });
      await end(payment, 'expired');
      return 'resolved';
    }
    await end(payment, MINISTRY_ENDS[state.status]);
    return 'resolved';
  }

  return { check };
}

export type PaymentResolver = ReturnType<typeof createPaymentResolver>;
