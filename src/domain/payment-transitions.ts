import { DomainError } from './errors.js';

export type PaymentStatus = 'pending' | 'submitted' | 'confirmed' | 'failed' | 'canceled';

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

export interface PaymentTransition {
  from: PaymentStatus;
  event: PaymentEvent;
  to: PaymentStatus;
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

export interface PaymentMove {
  event: PaymentEvent;
  /** Every state the event may leave from: the guard of a compare-and-set update. */
  from: PaymentStatus[];
  to: PaymentStatus;
}

const MOVES = new Map<PaymentEvent, PaymentMove>();
for (const t of PAYMENT_TRANSITIONS) {
  const move = MOVES.get(t.event) ?? { event: t.event, from: [], to: t.to };
  if (move.to !== t.to) throw new Error(`payment event ${t.event} leads to two states`);
  move.from.push(t.from);
  MOVES.set(t.event, move);
}

/** The move an event makes, for a guarded update; every event leads to one state. */
export function paymentMove(event: PaymentEvent): PaymentMove {
  const move = MOVES.get(event);
  if (!move) throw new Error(`no transition for payment event ${event}`);
  return move;
}

/** The state `event` moves a payment in `from` to; an illegal move is a domain error. */
export function nextPaymentStatus(from: PaymentStatus, event: PaymentEvent): PaymentStatus {
  const move = paymentMove(event);
  if (!move.from.includes(from)) throw new IllegalTransitionError(from, event);
  return move.to;
}

export function canMove(from: PaymentStatus, event: PaymentEvent): boolean {
  return paymentMove(event).from.includes(from);
}
