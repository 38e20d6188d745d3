import { DomainError } from './errors.js';
import type { CancelReason, PaymentCause, PaymentStatus } from './vocabulary.js';
import { movesOf, type Move, type Transition } from './transition-table.js';


/** What can happen to a payment; each names its cause, not its outcome. */
export type PaymentEvent =
  | 'ministry_accepted'
  | 'ministry_refused'
  | 'never_received'
  | 'linked_invoice_taken'
  | 'ministry_approved'
  | 'ministry_canceled'
  | 'ministry_rejected'
  | 'ministry_forgot'
  | 'expired'
  | 'partner_canceled';

export type PaymentTransition = Transition<PaymentStatus, PaymentEvent>;

/** Why a payment moves, for its timeline: who acted, and the ministry's answer behind it. */
export interface PaymentChange {
  cause: PaymentCause;
  detail?: Record<string, unknown> | null;
}

/**
 * Every legal move of a payment. A move not listed here is refused wherever it is attempted
 * (services, repositories, jobs), so a payment can only ever reach a state by one of these rows.
 */
export const PAYMENT_TRANSITIONS: readonly PaymentTransition[] = [
  { from: 'pending', event: 'ministry_accepted', to: 'submitted' },
  { from: 'pending', event: 'ministry_refused', to: 'failed' },
  { from: 'pending', event: 'never_received', to: 'failed' },
  // The ministry accepted it but it would settle an invoice another payment holds or has paid.
  { from: 'pending', event: 'linked_invoice_taken', to: 'failed' },
  { from: 'submitted', event: 'ministry_approved', to: 'confirmed' },
  { from: 'submitted', event: 'ministry_canceled', to: 'canceled' },
  { from: 'submitted', event: 'ministry_rejected', to: 'failed' },
  { from: 'submitted', event: 'ministry_forgot', to: 'failed' },
  { from: 'submitted', event: 'expired', to: 'canceled' },
  { from: 'submitted', event: 'partner_canceled', to: 'canceled' },
  { from: 'confirmed', event: 'partner_canceled', to: 'canceled' },
];

/** What the partner is told of a move that ends an accepted payment (one that got its 201 or was submitted later). */
export type PaymentEnding = { event: 'payment.failed' } | { event: 'payment.canceled'; reason: CancelReason };

/**
 * The moves that end a submitted or confirmed payment, each with its partner event. A pending
 * payment's end (refused, never received, a linked invoice taken) is answered to the partner as
 * the 422 of its creation, so it has none.
 */
export const PAYMENT_ENDINGS: Partial<Record<PaymentEvent, PaymentEnding>> = {
  ministry_rejected: { event: 'payment.failed' },
  ministry_forgot: { event: 'payment.failed' },
  ministry_canceled: { event: 'payment.canceled', reason: 'ministry' },
  expired: { event: 'payment.canceled', reason: 'expired' },
  partner_canceled: { event: 'payment.canceled', reason: 'partner' },
};

/** States that hold their invoices: no other payment may take them meanwhile. */
export const HOLDING_STATUSES: readonly PaymentStatus[] = ['pending', 'submitted', 'confirmed'];

/** States the confirmation job still has to bring to an end. */
export const UNRESOLVED_STATUSES: readonly PaymentStatus[] = ['pending', 'submitted'];

export class IllegalTransitionError extends DomainError {
  constructor(
    readonly from: PaymentStatus,
    readonly event: PaymentEvent,
  ) {
    super('illegal_transition', `Payment cannot be ${describe(event)} in status ${from}`);
  }
}

function describe(event: PaymentEvent): string {
  return event === 'partner_canceled' ? 'canceled' : `moved by ${event.replace(/_/g, ' ')}`;
}

export type PaymentMove = Move<PaymentStatus, PaymentEvent>;

/** The move an event makes, for a guarded update; every event leads to one state. */
export const paymentMove: (event: PaymentEvent) => PaymentMove = movesOf('payment', PAYMENT_TRANSITIONS);

/** The state `event` moves a payment in `from` to; an illegal move is a domain error. */
export function nextPaymentStatus(from: PaymentStatus, event: PaymentEvent): PaymentStatus {
  const move = paymentMove(event);
  if (!move.from.includes(from)) throw new IllegalTransitionError(from, event);
  return move.to;
}

export function canMove(from: PaymentStatus, event: PaymentEvent): boolean {
  return paymentMove(event).from.includes(from);
}
