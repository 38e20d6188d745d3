import { amountToNumber, compareAmounts } from '../domain/money.js';
import { isExpired } from '../domain/check-schedule.js';
import { MINISTRY_ENDS, requestedCancel, type PaymentChange } from './payment.machine.js';
import type { PaymentCause, Source } from '../domain/vocabulary.js';
import type { InvoiceRepository } from '../db/repositories/invoice.repository.js';
import type { PaymentRepository, PaymentRow } from './payment.repository.js';
import type { Outbox } from '../db/outbox.statements.js';
import type { MinistryCancellationRepository } from './ministry-cancellation.repository.js';
import type { MinistryAdapters } from '../domain/ministry.port.js';
import type { PaymentSubmitter } from './payment-submit.service.js';
import type { PaymentEnder } from './payment-end.service.js';
import type { MinistryCancellationService } from './ministry-cancellation.service.js';
import type { Clock } from '../domain/clock.port.js';

export interface PaymentResolverDeps {
  payments: PaymentRepository;
  invoices: InvoiceRepository;
  events: Outbox;
  ministries: MinistryAdapters;
  submitter: PaymentSubmitter;
  /** Ends a payment with its partner event, and finishes the cancels recorded as intents. */
  ender: PaymentEnder;
  cancellations: MinistryCancellationRepository;
  /** One cancel attempt at the ministry, which on success finishes the intent. */
  ministryCancellation: Pick<MinistryCancellationService, 'attempt'>;
  /** A submitted payment still unpaid this long after submission is canceled at the ministry. */
  expiryMs: number;
  /** A pending payment its ministry still does not know this long after its creation is failed, with a cancel owed. */
  unknownOutcomeMs: number;
  /** How long a check has to make its own expiry cancel before the job may take the intent over. */
  cancelGraceMs: number;
  now: Clock;
  /** Monotonic milliseconds for the ministry's answer time; the injected clock may jump. */
  elapsed?: () => number;
  /** A payment was confirmed `lagMs` after the ministry approved it (for the latency metric). */
  onConfirmed?: (source: Source, lagMs: number) => void;
}

/**
 * How long the ministry took to answer a check's question, and whether it answered. Only the
 * ministry's part: the check's reads and writes wait for the database, which other systems'
 * checks and the partners' requests share, and a ministry system's limit must not shrink for them.
 */
export type MinistryAnswerReport = (answer: { latencyMs: number; ok: boolean }) => void;

/** The ministry's answer to `ask`, its time and whether it came reported to `onAnswer`. */
async function timedAnswer<T>(ask: () => Promise<T>, elapsed: () => number, onAnswer: MinistryAnswerReport | undefined): Promise<T> {
  const askedAt = elapsed();
  let ok = false;
  try {
    const answer = await ask();
    ok = true;
    return answer;
  } finally {
    onAnswer?.({ latencyMs: elapsed() - askedAt, ok });
  }
}

/** The ends of a submitted payment that a cancel at the ministry makes: the expiry's, and one the ministry reports. */
function ministryCancels(deps: PaymentResolverDeps, now: Clock) {
  /**
   * The expiry's cancel: the intent first, in a transaction, then the ministry (once it has
   * canceled, the citizen can no longer pay this payment), then the move. A process that dies
   * between them leaves the intent, and whoever finds the cancel made (the job retrying it, or a
   * check seeing it at the ministry) records the payment as expired. True when it is canceled.
   */
  async function expire(payment: PaymentRow, refNum: string): Promise<boolean> {
    const dueAt = new Date(now().getTime() + deps.cancelGraceMs);
    await deps.payments.transaction((uow) => deps.cancellations.addIntent(uow, { paymentId: payment.id, source: payment.source, refNum, kind: requestedCancel('expiry_due'), dueAt }));
    const intent = await deps.cancellations.find(payment.id);
    if (!intent || intent.done_at !== null || intent.kind === 'owed') return false;
    // The partner's intent, recorded first, stands: the payment is finished as the partner's cancel.
    return deps.ministryCancellation.attempt({ payment_id: payment.id, source: payment.source, ref_num: refNum, attempts: intent.attempts, kind: intent.kind });
  }

  /**
   * The ministry canceled the payment. A cancel the service asked for and had not recorded yet (the
   * partner's, the expiry's, left by a crash) is finished as what it was; otherwise the ministry did it.
   */
  async function canceledAtMinistry(payment: PaymentRow, why: PaymentChange): Promise<void> {
    const intent = await deps.cancellations.find(payment.id);
    if (intent && intent.done_at === null && (intent.kind === 'partner' || intent.kind === 'expiry')) await deps.ender.finishIntent(payment.id, intent.kind);
    else await deps.ender.end(payment.id, MINISTRY_ENDS.canceled, why);
  }

  return { expire, canceledAtMinistry };
}

/** How long the payment may wait for approval: a sandbox scenario's payment may carry a bound of its own. */
const expiryOf = (payment: PaymentRow, defaultMs: number): number => payment.expiry_ms ?? defaultMs;

/**
 * Brings a pending or submitted payment up to date with its ministry: every answer moves it by
 * the transition table, so no payment stays unresolved for ever or holds invoices it cannot pay.
 */
export function createPaymentResolver(deps: PaymentResolverDeps) {
  const { now } = deps;
  const elapsed = deps.elapsed ?? (() => performance.now());
  const { expire, canceledAtMinistry } = ministryCancels(deps, now);

  /**
   * What is still owed on the payment's invoice once the ministry confirmed it (null: nothing),
   * where our books leave `owed`. The ministry, asked only when they leave something, may say it
   * is settled all the same (paid in part at a bank); a balance it shows is not taken over ours, as
   * its view may lag behind the approval it just gave or a reversal of ours, in either direction.
   */
  async function remainingBalance(payment: PaymentRow, refNum: string, owed: string): Promise<string | null> {
    const invoice = await deps.ministries[payment.source].getByRef(refNum);
    if (!invoice || invoice.status !== 'open' || compareAmounts(invoice.amount, '0') <= 0) return null;
    return owed;
  }

  /**
   * submitted -> confirmed and the outbox row, as the ministry reported it (`paidAt` is the
   * ministry's time): its invoices paid, or after a part-payment its invoice open with the balance
   * the ministry shows. False when another actor moved the payment first.
   */
  async function confirm(payment: PaymentRow, refNum: string, paidAt: Date, why: PaymentChange): Promise<boolean> {
    const outbox = deps.events.outbox({ event: 'payment.confirmed', data: { id: payment.id, amount: amountToNumber(payment.amount), partnerReference: payment.partner_reference } });
    // Most payments settle their invoice: confirmed in one statement that also checks the books.
    let at = now();
    let paid = await deps.payments.markConfirmedIfSettled({ id: payment.id, at, paidAt, outbox, why });
    if (paid !== null && !Array.isArray(paid)) {
      const remaining = await remainingBalance(payment, refNum, paid.owed);
      const change = remaining ? { ...why, detail: { ...why.detail, remainingBalance: remaining } } : why;
      at = now();
      paid = await deps.payments.markConfirmed({ id: payment.id, at, paidAt, outbox, why: change, remaining });
    }
    // The lag watches the confirmation path; a reconciliation confirms hours later by design.
    if (paid && why.cause !== 'reconciliation') deps.onConfirmed?.(payment.source, at.getTime() - paidAt.getTime());
    return paid !== null;
  }

  /**
   * Asks the ministry about the payment (by `refNum` when the caller has it, else its invoice's)
   * and moves it by the answer, naming `cause` in its timeline. Resolves to whether the payment
   * may still be unresolved: a confirmed or ended payment needs no further check.
   */
  async function check(payment: PaymentRow, opts: { refNum?: string; cause: PaymentCause; onAnswer?: MinistryAnswerReport }): Promise<'resolved' | 'unresolved'> {
    const { refNum, cause } = opts;
    // A pending payment is submitted again, which needs its whole invoice; a submitted one, its refNum.
    const invoice = refNum === undefined || payment.status === 'pending' ? await deps.invoices.findById(payment.invoice_id) : null;
    const ref = refNum ?? invoice?.ref_num;
    if (ref === undefined) return 'unresolved';
    const adapter = deps.ministries[payment.source];
    const state = await timedAnswer(() => adapter.getPayment({ paymentId: payment.id, refNum: ref }), elapsed, opts.onAnswer);
    if (payment.status === 'pending') {
      // A submit whose outcome is unknown may still be on its way (held in the network, retried by
      // the partner): the ministry is asked again until it knows the payment or the wait is over.
      if (state.status !== 'unknown') {
        if (invoice) await deps.submitter.submit(payment, invoice, cause);
        return 'unresolved';
      }
      if (!isExpired(payment.created_at, now(), deps.unknownOutcomeMs)) return 'unresolved';
      await deps.submitter.neverReceived(payment, ref, cause);
      return 'resolved';
    }
    if (payment.status !== 'submitted') return 'resolved';
    if (state.status === 'confirmed') {
      const paidAt = state.confirmedAt ? new Date(state.confirmedAt) : now();
      await confirm(payment, ref, paidAt, { cause, detail: { ministry: 'confirmed', confirmedAt: state.confirmedAt } });
      return 'resolved';
    }
    if (state.status === 'submitted') {
      if (!isExpired(payment.submitted_at, now(), expiryOf(payment, deps.expiryMs))) return 'unresolved';
      return (await expire(payment, ref)) ? 'resolved' : 'unresolved';
    }
    const why = { cause, detail: { ministry: state.status } };
    if (state.status === 'canceled') await canceledAtMinistry(payment, why);
    else await deps.ender.end(payment.id, MINISTRY_ENDS[state.status], why);
    return 'resolved';
  }

  return { check, confirm };
}

export type PaymentResolver = ReturnType<typeof createPaymentResolver>;
