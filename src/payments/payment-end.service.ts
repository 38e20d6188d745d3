import type { PaymentRepository, PaymentRow } from './payment.repository.js';
import type { Outbox, PaymentEvent } from '../db/outbox.statements.js';
import type { MinistryCancellationRepository } from './ministry-cancellation.repository.js';
import type { UnitOfWork } from '../db/unit-of-work.js';
import { effectsOf, INTENT_ENDS, type PaymentChange, type PaymentEffects, type PaymentTrigger } from './payment.machine.js';
import type { CancellationKind } from '../domain/vocabulary.js';
import type { Clock } from '../domain/clock.port.js';

export interface PaymentEnderDeps {
  payments: PaymentRepository;
  events: Outbox;
  cancellations: MinistryCancellationRepository;
  /** The expiry rule's age, recorded in an expired payment's timeline. */
  expiryMs: number;
  now: Clock;
}

/** The cancels recorded as intents before the ministry is asked, and the move that finishes each. */
export type CancelIntentKind = Exclude<CancellationKind, 'owed'>;

/** The partner's event a move announces, with the payment's data as the webhook body carries it. */
function announced(effects: PaymentEffects, payment: PaymentRow): PaymentEvent | null {
  const data = { id: payment.id, invoiceId: payment.invoice_id, partnerReference: payment.partner_reference };
  switch (effects.announce?.event) {
    case 'payment.failed':
      return { event: 'payment.failed', data };
    case 'payment.canceled':
      return { event: 'payment.canceled', data: { ...data, reason: effects.announce.reason ?? 'ministry' } };
    default:
      return null;
  }
}

/**
 * The one way a submitted or confirmed payment ends: the move by the payment machine and the
 * effects it lists for it (the invoices released or reopened, the partner's `payment.failed` or
 * `payment.canceled` event) commit together, so every end is announced exactly once (the move is
 * a compare-and-set: a second actor finds nothing to move and writes no event).
 */
export function createPaymentEnder(deps: PaymentEnderDeps) {
  const { now } = deps;

  const intentCauses: Record<CancelIntentKind, PaymentChange> = {
    partner: { cause: 'partner_request', detail: { ministry: 'canceled' } },
    expiry: { cause: 'expiry', detail: { ministry: 'canceled', expiryMs: deps.expiryMs } },
  };

  async function endIn(uow: UnitOfWork, paymentId: string, trigger: PaymentTrigger, why: PaymentChange): Promise<PaymentRow | null> {
    const at = now();
    const effects = effectsOf(trigger);
    const moved = await deps.payments.move(uow, paymentId, trigger, at, why, effects.failureReason ? { failureReason: effects.failureReason } : { canceledAt: at });
    if (!moved) return null;
    // `reopen` gives back what a confirmed payment paid; the invoice table's guard leaves unpaid invoices as they are.
    await deps.payments.releaseInvoices(uow, paymentId, effects.invoices === 'reopen' ? 'payment_canceled' : null);
    const event = announced(effects, moved);
    if (event) await deps.events.append(uow, moved.partner_id, event);
    return moved;
  }

  return {
    /** Ends the payment by `trigger`; false when another actor moved it first. */
    async end(paymentId: string, trigger: PaymentTrigger, why: PaymentChange): Promise<boolean> {
      return (await deps.payments.transaction((uow) => endIn(uow, paymentId, trigger, why))) !== null;
    },

    /**
     * Finishes a cancel the ministry has confirmed, by the intent's kind (the partner's cancel, the
     * expiry), and closes the intent, in one transaction. A payment another actor moved meanwhile
     * closes the intent without a move.
     */
    async finishIntent(paymentId: string, kind: CancelIntentKind): Promise<void> {
      await deps.payments.transaction(async (uow) => {
        await endIn(uow, paymentId, INTENT_ENDS[kind], intentCauses[kind]);
        await deps.cancellations.markDone(paymentId, now(), uow);
      });
    },
  };
}

export type PaymentEnder = ReturnType<typeof createPaymentEnder>;
