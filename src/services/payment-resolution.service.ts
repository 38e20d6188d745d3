import { amountToNumber, compareAmounts } from '../domain/money.js';
import { isExpired } from '../domain/check-schedule.js';
import type { PaymentChange, PaymentEvent } from '../domain/payment-transitions.js';
import type { PaymentCause, Source } from '../domain/vocabulary.js';
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
  /** A payment was confirmed `lagMs` after the ministry approved it (for the latency metric). */
  onConfirmed?: (source: Source, lagMs: number) => void;
}

/** The move for each way the ministry can end a submitted payment. */
const MINISTRY_ENDS = { canceled: 'ministry_canceled', rejected: 'ministry_rejected', unknown: 'ministry_forgot' } as const satisfies Record<string, PaymentEvent>;

/** Why the service ended a payment the ministry ended, for the partner's failure reason. */
const MINISTRY_ENDED: Partial<Record<PaymentEvent, string>> = {
  ministry_rejected: 'The ministry system rejected the payment',
  ministry_forgot: 'The ministry system has no record of the payment',
};

/** How long the payment may wait for approval: a sandbox scenario's payment may carry a bound of its own. */
const expiryOf = (payment: PaymentRow, defaultMs: number): number => payment.expiry_ms ?? defaultMs;

/**
 * Brings a pending or submitted payment up to date with its ministry: every answer moves it by
 * the transition table, so no payment stays unresolved for ever or holds invoices it cannot pay.
 */
export function createPaymentResolver(deps: PaymentResolverDeps) {
  const now = deps.now ?? systemClock;

  /**
   * What is still owed on the payment's invoice once the ministry confirmed it (null: nothing).
   * Our books set the ceiling: a whole-balance payment leaves nothing, and no balance exceeds what
   * was billed less what was confirmed. The ministry, asked only when they leave something, can
   * lower it, never raise it: its view may lag behind the approval it just gave.
   */
  async function remainingBalance(payment: PaymentRow, refNum: string): Promise<string | null> {
    const owed = await deps.payments.owedAfter(payment.id);
    if (owed === null) return null;
    const invoice = await deps.ministries[payment.source].getByRef(refNum);
    if (!invoice || invoice.status !== 'open' || compareAmounts(invoice.amount, '0') <= 0) return null;
    return compareAmounts(invoice.amount, owed) < 0 ? invoice.amount : owed;
  }

  /**
   * submitted -> confirmed and the outbox row, as the ministry reported it (`paidAt` is the
   * ministry's time): its invoices paid, or after a part-payment its invoice open with the balance
   * the ministry shows. False when another actor moved the payment first.
   */
  async function confirm(payment: PaymentRow, refNum: string, paidAt: Date, why: PaymentChange): Promise<boolean> {
    const remaining = await remainingBalance(payment, refNum);
    const outbox = deps.events.outbox({ event: 'payment.confirmed', data: { id: payment.id, amount: amountToNumber(payment.amount) } });
    const at = now();
    const change = remaining ? { ...why, detail: { ...why.detail, remainingBalance: remaining } } : why;
    const paid = await deps.payments.markConfirmed({ id: payment.id, at, paidAt, outbox, why: change, remaining });
    // The lag watches the confirmation path; a reconciliation confirms hours later by design.
    if (paid && why.cause !== 'reconciliation') deps.onConfirmed?.(payment.source, at.getTime() - paidAt.getTime());
    return paid !== null;
  }

  /** Ends an unconfirmed payment and releases its invoices; they were never paid by it. */
  async function end(payment: PaymentRow, event: PaymentEvent, why: PaymentChange): Promise<void> {
    const at = now();
    const reason = MINISTRY_ENDED[event];
    await deps.payments.transaction(async (uow) => {
      const moved = await deps.payments.move(uow, payment.id, event, at, why, reason ? { failureReason: reason } : { canceledAt: at });
      if (moved) await deps.payments.releaseInvoices(uow, payment.id, null);
    });
  }

  /**
   * Asks the ministry about the payment (by `refNum` when the caller has it, else its invoice's)
   * and moves it by the answer, naming `cause` in its timeline. Resolves to whether the payment
   * may still be unresolved: a confirmed or ended payment needs no further check.
   */
  async function check(payment: PaymentRow, opts: { refNum?: string; cause: PaymentCause }): Promise<'resolved' | 'unresolved'> {
    const { refNum, cause } = opts;
    // A pending payment is submitted again, which needs its whole invoice; a submitted one, its refNum.
    const invoice = refNum === undefined || payment.status === 'pending' ? await deps.invoices.findById(payment.invoice_id) : null;
    const ref = refNum ?? invoice?.ref_num;
    if (ref === undefined) return 'unresolved';
    const adapter = deps.ministries[payment.source];
    const state = await adapter.getPayment({ paymentId: payment.id, refNum: ref });
    if (payment.status === 'pending') {
      if (state.status === 'unknown') await deps.submitter.neverReceived(payment, cause);
      else if (invoice) await deps.submitter.submit(payment, invoice, cause);
      return 'unresolved';
    }
    if (payment.status !== 'submitted') return 'resolved';
    if (state.status === 'confirmed') {
      const paidAt = state.confirmedAt ? new Date(state.confirmedAt) : now();
      await confirm(payment, ref, paidAt, { cause, detail: { ministry: 'confirmed', confirmedAt: state.confirmedAt } });
      return 'resolved';
    }
    if (state.status === 'submitted') {
      if (!isExpired(payment.submitted_at, now(), expiryOf(payment, deps.expiryMs))) return 'unresolved';
      // The ministry first: once it has canceled, the citizen can no longer pay this payment.
      await adapter.cancelPayment({ paymentId: payment.id, refNum: ref });
      await end(payment, 'expired', { cause: 'expiry', detail: { ministry: 'canceled', expiryMs: expiryOf(payment, deps.expiryMs) } });
      return 'resolved';
    }
    await end(payment, MINISTRY_ENDS[state.status], { cause, detail: { ministry: state.status } });
    return 'resolved';
  }

  return { check, confirm };
}

export type PaymentResolver = ReturnType<typeof createPaymentResolver>;
