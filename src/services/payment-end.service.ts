import type { PaymentRepository, PaymentRow } from '../db/repositories/payment.repository.js';
import type { EventRepository, PaymentEvent as OutboxEvent } from '../db/repositories/event.repository.js';
import type { MinistryCancellationRepository } from '../db/repositories/ministry-cancellation.repository.js';
import type { UnitOfWork } from '../db/unit-of-work.js';
import { PAYMENT_ENDINGS, type PaymentChange, type PaymentEvent } from '../domain/payment-transitions.js';
import type { CancellationKind } from '../domain/vocabulary.js';
import type { Clock } from '../domain/clock.port.js';

export interface PaymentEnderDeps {
  payments: PaymentRepository;
  events: EventRepository;
  cancellations: MinistryCancellationRepository;
  /** The expiry rule's age, recorded in an expired payment's timeline. */
  expiryMs: number;
  now: Clock;
}

/** The cancels recorded as intents before the ministry is asked, and the move that finishes each. */
export type CancelIntentKind = Exclude<CancellationKind, 'owed'>;

/** Why the service ended a payment the ministry ended, for the partner's failure reason. */
const FAILURE_REASONS: Partial<Record<PaymentEvent, string>> = {
  ministry_rejected: 'The ministry system rejected the payment',
  ministry_forgot: 'The ministry system has no record of the payment',
};

/** The partner's event of an ending move, with the payment's data as the webhook body carries it. */
function endingEvent(event: PaymentEvent, payment: PaymentRow): OutboxEvent | null {
  const ending = PAYMENT_ENDINGS[event];
  if (!ending) return null;
  const data = { id: payment.id, invoiceId: payment.invoice_id, partnerReference: payment.partner_reference };
  return ending.event === 'payment.failed' ? { event: ending.event, data } : { event: ending.event, data: { ...data, reason: ending.reason } };
}

/**
 * The one way a submitted or confirmed payment ends: the move by the transition table, the release
 * of its invoices and the partner's `payment.failed` or `payment.canceled` event commit together,
 * so every end is announced exactly once (the move is a compare-and-set: a second actor finds
 * nothing to move and writes no event).
 */
export function createPaymentEnder(deps: PaymentEnderDeps) {
  const { now } = deps;

  const intentMoves: Record<CancelIntentKind, { event: PaymentEvent; why: PaymentChange }> = {
    partner: { event: 'partner_canceled', why: { cause: 'partner_request', detail: { ministry: 'canceled' } } },
    expiry: { event: 'expired', why: { cause: 'expiry', detail: { ministry: 'canceled', expiryMs: deps.expiryMs } } },
  };

  async function endIn(uow: UnitOfWork, paymentId: string, event: PaymentEvent, why: PaymentChange): Promise<PaymentRow | null> {
    const at = now();
    const failureReason = FAILURE_REASONS[event];
    const moved = await deps.payments.move(uow, paymentId, event, at, why, failureReason ? { failureReason } : { canceledAt: at });
    if (!moved) return null;
    // Only a partner's cancel can end a confirmed payment: the invoices it paid reopen. The other
    // ends leave unpaid invoices as they are; the invoice table's guard sees to both.
    await deps.payments.releaseInvoices(uow, paymentId, event === 'partner_canceled' ? 'payment_canceled' : null);
    const announced = endingEvent(event, moved);
    if (announced) await deps.events.append(uow, moved.partner_id, announced);
    return moved;
  }

  return {
    /** Ends the payment by `event`; false when another actor moved it first. */
    async end(paymentId: string, event: PaymentEvent, why: PaymentChange): Promise<boolean> {
      return (await deps.payments.transaction((uow) => endIn(uow, paymentId, event, why))) !== null;
    },

    /**
     * Finishes a cancel the ministry has confirmed, by the intent's kind (the partner's cancel, the
     * expiry), and closes the intent, in one transaction. A payment another actor moved meanwhile
     * closes the intent without a move.
     */
    async finishIntent(paymentId: string, kind: CancelIntentKind): Promise<void> {
      const { event, why } = intentMoves[kind];
      await deps.payments.transaction(async (uow) => {
        await endIn(uow, paymentId, event, why);
        await deps.cancellations.markDone(paymentId, now(), uow);
      });
    },
  };
}

export type PaymentEnder = ReturnType<typeof createPaymentEnder>;
