import { DomainError } from '../domain/errors.js';
import type { CancelReason, CancellationKind, PaymentCause, PaymentStatus, WebhookEvent } from '../domain/vocabulary.js';
import { movesOf, type Move, type Transition } from '../domain/transition-table.js';

/**
 * Every state a payment can be in. Five are the statuses partners see; the others are the intents
 * between them the service keeps beside the status (a row in ministry_cancellations), each shown
 * to partners as the status it leaves from (toExternal):
 * - `cancel_requested`: a submitted payment the partner canceled, the ministry not yet asked or not yet answering;
 * - `expiry_requested`: a submitted payment past its expiry, its cancel at the ministry under way;
 * - `reversal_requested`: a confirmed payment the partner canceled, the ministry's reversal under way;
 * - `cancel_owed`: a payment failed here that the ministry may hold, so a cancel is owed there.
 * `pending` is the submit under way (or its outcome unknown and being asked about).
 */
export const PAYMENT_STATES = ['pending', 'submitted', 'cancel_requested', 'expiry_requested', 'confirmed', 'reversal_requested', 'failed', 'cancel_owed', 'canceled'] as const;
export type PaymentState = (typeof PAYMENT_STATES)[number];

const EXTERNAL: Record<PaymentState, PaymentStatus> = {
  pending: 'pending',
  submitted: 'submitted',
  cancel_requested: 'submitted',
  expiry_requested: 'submitted',
  confirmed: 'confirmed',
  reversal_requested: 'confirmed',
  failed: 'failed',
  cancel_owed: 'failed',
  canceled: 'canceled',
};

/** The status partners see (and the payments table stores) for a state: an intent reads as the status it leaves from. */
export function toExternal(state: PaymentState): PaymentStatus {
  return EXTERNAL[state];
}

/**
 * The state of a payment from what is stored: its status, and the cancellation at the ministry it
 * still waits for, if any. An expiry's cancel of a payment confirmed meanwhile is moot (it is closed
 * without a move), so that payment is simply confirmed.
 */
export function stateOf(status: PaymentStatus, openCancellation: CancellationKind | null): PaymentState {
  if (openCancellation === null) return status;
  if (status === 'submitted') return openCancellation === 'partner' ? 'cancel_requested' : openCancellation === 'expiry' ? 'expiry_requested' : 'submitted';
  if (status === 'confirmed') return openCancellation === 'partner' ? 'reversal_requested' : 'confirmed';
  if (status === 'failed') return 'cancel_owed';
  return status;
}

/** What can happen to a payment; each names its cause, not its outcome. */
export type PaymentTrigger =
  | 'ministry_accepted'
  | 'ministry_refused'
  | 'never_received'
  | 'linked_invoice_taken'
  | 'accepted_after_end'
  | 'ministry_approved'
  | 'ministry_canceled'
  | 'ministry_rejected'
  | 'ministry_forgot'
  | 'expiry_due'
  | 'expired'
  | 'partner_cancel_requested'
  | 'partner_canceled'
  | 'owed_cancel_done';

/**
 * What a move does besides changing the state, in the transaction (or the statement) that makes
 * it. The invoice cache forgets every invoice a move changes: the stores that write them do.
 */
export interface PaymentEffects {
  /**
   * The invoices the payment holds: `pay` marks them paid (or, after a part-payment, lowers the
   * balance), `release` lets them go unchanged, `reopen` lets them go and gives back what the
   * payment paid (a reversal owes exactly its amount again); absent: they stay held.
   */
  invoices?: 'pay' | 'release' | 'reopen';
  /** The partner's event of the move, written with it (the outbox). */
  announce?: { event: WebhookEvent; reason?: CancelReason };
  /**
   * The cancellation at the ministry: `request_partner` / `request_expiry` record the cancel the
   * service is about to ask for (before it asks), `owe` records one owed because the ministry may
   * hold the payment, `close` marks it done once the ministry confirmed.
   */
  ministry?: 'request_partner' | 'request_expiry' | 'owe' | 'close';
  /** The failure reason partners read, when the move fails the payment for a reason of the service's own. */
  failureReason?: string;
}

export interface PaymentEdge {
  from: PaymentState;
  trigger: PaymentTrigger;
  to: PaymentState;
  /** Who moves the payment by this edge, as its timeline names it. */
  causes: readonly PaymentCause[];
  effects: PaymentEffects;
}

const CHECKS: readonly PaymentCause[] = ['partner_request', 'confirmation_job', 'reconciliation'];
const SUBMITTED: readonly PaymentState[] = ['submitted', 'cancel_requested', 'expiry_requested'];

const RELEASE: PaymentEffects = { invoices: 'release' };
const REJECTED: PaymentEffects = { invoices: 'release', announce: { event: 'payment.failed' }, failureReason: 'The ministry system rejected the payment' };
const FORGOTTEN: PaymentEffects = { invoices: 'release', announce: { event: 'payment.failed' }, failureReason: 'The ministry system has no record of the payment' };
const PARTNER_CANCELED: PaymentEffects = { invoices: 'reopen', announce: { event: 'payment.canceled', reason: 'partner' }, ministry: 'close' };
const CONFIRMED: PaymentEffects = { invoices: 'pay', announce: { event: 'payment.confirmed' } };

/**
 * The whole life of a payment: every state, every way out of it, who takes it and what it does.
 * A move not listed here is refused wherever it is attempted (services, repositories, jobs), and
 * the code that makes a move takes its effects from here.
 */
export const PAYMENT_MACHINE: readonly PaymentEdge[] = [
  // The submit: the ministry's answer to it, or the end of the wait for one.
  { from: 'pending', trigger: 'ministry_accepted', to: 'submitted', causes: ['partner_request', 'confirmation_job'], effects: { announce: { event: 'payment.submitted' } } },
  { from: 'pending', trigger: 'ministry_refused', to: 'failed', causes: ['partner_request', 'confirmation_job'], effects: RELEASE },
  {
    from: 'pending',
    trigger: 'never_received',
    to: 'cancel_owed',
    causes: ['confirmation_job'],
    effects: { invoices: 'release', ministry: 'owe', failureReason: 'Payment could not be submitted to the ministry system' },
  },
  // The ministry accepted it, but it would settle an invoice another payment holds or has paid.
  { from: 'pending', trigger: 'linked_invoice_taken', to: 'cancel_owed', causes: ['partner_request', 'confirmation_job'], effects: { invoices: 'release', ministry: 'owe' } },
  // A submit that reached the ministry after the payment had failed here as never received.
  { from: 'failed', trigger: 'accepted_after_end', to: 'cancel_owed', causes: ['partner_request', 'confirmation_job'], effects: { ministry: 'owe' } },
  { from: 'cancel_owed', trigger: 'accepted_after_end', to: 'cancel_owed', causes: ['partner_request', 'confirmation_job'], effects: { ministry: 'owe' } },
  { from: 'cancel_owed', trigger: 'owed_cancel_done', to: 'failed', causes: ['confirmation_job'], effects: { ministry: 'close' } },

  // A submitted payment: the ministry approves, cancels, rejects or forgets it, whatever the service has asked of it meanwhile.
  { from: 'submitted', trigger: 'ministry_approved', to: 'confirmed', causes: CHECKS, effects: CONFIRMED },
  { from: 'cancel_requested', trigger: 'ministry_approved', to: 'reversal_requested', causes: CHECKS, effects: CONFIRMED },
  { from: 'expiry_requested', trigger: 'ministry_approved', to: 'confirmed', causes: CHECKS, effects: CONFIRMED },
  { from: 'submitted', trigger: 'ministry_canceled', to: 'canceled', causes: CHECKS, effects: { invoices: 'release', announce: { event: 'payment.canceled', reason: 'ministry' } } },
  ...SUBMITTED.map((from): PaymentEdge => ({ from, trigger: 'ministry_rejected', to: 'failed', causes: CHECKS, effects: REJECTED })),
  ...SUBMITTED.map((from): PaymentEdge => ({ from, trigger: 'ministry_forgot', to: 'failed', causes: CHECKS, effects: FORGOTTEN })),

  // The expiry: the cancel is recorded, then made at the ministry, then the payment is canceled.
  { from: 'submitted', trigger: 'expiry_due', to: 'expiry_requested', causes: ['partner_request', 'confirmation_job'], effects: { ministry: 'request_expiry' } },
  {
    from: 'expiry_requested',
    trigger: 'expired',
    to: 'canceled',
    causes: ['expiry'],
    effects: { invoices: 'release', announce: { event: 'payment.canceled', reason: 'expired' }, ministry: 'close' },
  },

  // The partner's cancel (a reversal once confirmed): recorded, made at the ministry, then finished here.
  { from: 'submitted', trigger: 'partner_cancel_requested', to: 'cancel_requested', causes: ['partner_request'], effects: { ministry: 'request_partner' } },
  { from: 'confirmed', trigger: 'partner_cancel_requested', to: 'reversal_requested', causes: ['partner_request'], effects: { ministry: 'request_partner' } },
  // An expiry's cancel under way when the partner cancels: the partner's cancel finishes it.
  { from: 'expiry_requested', trigger: 'partner_canceled', to: 'canceled', causes: ['partner_request'], effects: PARTNER_CANCELED },
  { from: 'cancel_requested', trigger: 'partner_canceled', to: 'canceled', causes: ['partner_request'], effects: PARTNER_CANCELED },
  { from: 'reversal_requested', trigger: 'partner_canceled', to: 'canceled', causes: ['partner_request'], effects: PARTNER_CANCELED },
];

/** The trigger each ministry answer that ends a submitted payment moves it by. */
export const MINISTRY_ENDS = { canceled: 'ministry_canceled', rejected: 'ministry_rejected', unknown: 'ministry_forgot' } as const satisfies Record<string, PaymentTrigger>;

/** The trigger that finishes each cancel the service records before asking the ministry. */
export const INTENT_ENDS = { partner: 'partner_canceled', expiry: 'expired' } as const satisfies Record<Exclude<CancellationKind, 'owed'>, PaymentTrigger>;

const EFFECTS = new Map<PaymentTrigger, PaymentEffects>();
for (const edge of PAYMENT_MACHINE) {
  const known = EFFECTS.get(edge.trigger);
  // The code makes a move by its trigger: one trigger must mean one set of effects wherever it leaves from.
  if (known && JSON.stringify(known) !== JSON.stringify(edge.effects)) throw new Error(`payment trigger ${edge.trigger} has two sets of effects`);
  EFFECTS.set(edge.trigger, edge.effects);
}

/** The kind of cancel an intent's trigger records before the ministry is asked (its `request_…` effect). */
export function requestedCancel(trigger: 'partner_cancel_requested' | 'expiry_due'): Exclude<CancellationKind, 'owed'> {
  return effectsOf(trigger).ministry === 'request_partner' ? 'partner' : 'expiry';
}

/** What a move by `trigger` does besides changing the state. */
export function effectsOf(trigger: PaymentTrigger): PaymentEffects {
  const effects = EFFECTS.get(trigger);
  if (!effects) throw new Error(`no transition for payment trigger ${trigger}`);
  return effects;
}

export type PaymentTransition = Transition<PaymentStatus, PaymentTrigger>;

/**
 * The machine as the payments table stores it: each edge that changes the status, from and to the
 * statuses partners see. The database's guard on status changes is checked against this.
 */
export const PAYMENT_TRANSITIONS: readonly PaymentTransition[] = [
  ...new Map(
    PAYMENT_MACHINE.filter((e) => toExternal(e.from) !== toExternal(e.to)).map((e): [string, PaymentTransition] => {
      const t = { from: toExternal(e.from), event: e.trigger, to: toExternal(e.to) };
      return [`${t.from} ${t.event}`, t];
    }),
  ).values(),
];

/** Why a payment moves, for its timeline: who acted, and the ministry's answer behind it. */
export interface PaymentChange {
  cause: PaymentCause;
  detail?: Record<string, unknown> | null;
}

/** States the confirmation job still has to bring to an end. */
export const UNRESOLVED_STATUSES: readonly PaymentStatus[] = ['pending', 'submitted'];

export class IllegalTransitionError extends DomainError {
  constructor(
    readonly from: PaymentStatus,
    readonly trigger: PaymentTrigger,
  ) {
    super('illegal_transition', `Payment cannot be ${describe(trigger)} in status ${from}`);
  }
}

function describe(trigger: PaymentTrigger): string {
  return trigger === 'partner_canceled' || trigger === 'partner_cancel_requested' ? 'canceled' : `moved by ${trigger.replace(/_/g, ' ')}`;
}

export type PaymentMove = Move<PaymentStatus, PaymentTrigger>;

/**
 * The stored statuses a status-changing trigger may leave from and the one it leads to, for a
 * guarded update (compare-and-set on the status).
 */
export const paymentMove: (trigger: PaymentTrigger) => PaymentMove = movesOf('payment', PAYMENT_TRANSITIONS);

/** The statuses a trigger may leave from, an intent's included (it leaves the status as it is). */
export function storedFrom(trigger: PaymentTrigger): PaymentStatus[] {
  const edges = PAYMENT_MACHINE.filter((e) => e.trigger === trigger);
  if (edges.length === 0) throw new Error(`no transition for payment trigger ${trigger}`);
  return [...new Set(edges.map((e) => toExternal(e.from)))];
}

/** The status `trigger` moves a payment in `from` to; an illegal move is a domain error. */
export function nextPaymentStatus(from: PaymentStatus, trigger: PaymentTrigger): PaymentStatus {
  const edge = PAYMENT_MACHINE.find((e) => e.trigger === trigger && toExternal(e.from) === from);
  if (!edge) throw new IllegalTransitionError(from, trigger);
  return toExternal(edge.to);
}

export function canMove(from: PaymentStatus, trigger: PaymentTrigger): boolean {
  return storedFrom(trigger).includes(from);
}
