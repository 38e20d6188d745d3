import type { InvoiceRepository, InvoiceRow } from '../db/repositories/invoice.repository.js';
import type { PaymentDetail, PaymentRepository, PaymentRow } from './payment.repository.js';
import type { UnitOfWork } from '../db/unit-of-work.js';
import type { Outbox } from '../db/outbox.statements.js';
import type { MinistryCancellationRepository } from './ministry-cancellation.repository.js';
import { effectsOf, type PaymentChange, type PaymentTrigger } from './payment.machine.js';
import type { MinistryAdapters } from '../domain/ministry.port.js';
import type { PaymentCause, Source } from '../domain/vocabulary.js';
import { UpstreamUnavailableError } from '../domain/errors.js';
import type { MinistryCancellationService } from './ministry-cancellation.service.js';
import type { Logger } from '../domain/logger.port.js';
import type { Clock } from '../domain/clock.port.js';

const LINKED_INVOICE_TAKEN = 'An invoice the ministry settles together with this one is already being paid or is paid';
const LINKED_INVOICE_UNKNOWN = 'An invoice the ministry settles together with this one is unknown to the ministry system';
const ACCEPTED_AFTER_END = 'The ministry accepted the payment after it had failed here as never received';
const NEVER_KNOWN = 'The ministry still had no record of the payment when the wait for its submit ended';

export interface PaymentSubmitterDeps {
  payments: PaymentRepository;
  invoices: InvoiceRepository;
  events: Outbox;
  ministries: MinistryAdapters;
  cancellations: MinistryCancellationRepository;
  ministryCancellation: MinistryCancellationService;
  log: Logger;
  now: Clock;
}

type SubmitStores = Pick<PaymentSubmitterDeps, 'payments' | 'invoices' | 'events' | 'ministries' | 'cancellations'>;

/**
 * Invoices the ministry settles together with this one, stored so they get stable ids; null when
 * the ministry does not know one of them (it cannot be claimed, so the payment must not stand).
 * A failed lookup throws: the payment stays pending and is settled on a later try.
 */
async function linkedInvoices(deps: SubmitStores, source: Source, refNums: string[]): Promise<string[] | null> {
  if (refNums.length === 0) return [];
  const known = await deps.invoices.findByRefs(refNums.map((refNum) => ({ source, refNum })));
  const missing = refNums.filter((r) => !known.some((k) => k.ref_num === r));
  let fetched;
  try {
    fetched = await Promise.all(missing.map((r) => deps.ministries[source].getByRef(r)));
  } catch (err) {
    throw new UpstreamUnavailableError(`linked invoice lookup at ${source} failed`, { cause: err });
  }
  const stored = await deps.invoices.upsert(fetched.filter((f) => f !== null));
  if (fetched.some((f) => f === null)) return null;
  // Order as the ministry named them: the positions in payment_invoices follow it.
  const idByRef = new Map([...known, ...stored].map((r) => [r.ref_num, r.id]));
  return refNums.map((r) => idByRef.get(r)).filter((id): id is string => id !== undefined);
}

/** Holds every linked invoice, or none and gives the reason to refuse the payment. */
async function holdOrRefusal(payments: PaymentRepository, uow: UnitOfWork, paymentId: string, linked: string[] | null): Promise<string | null> {
  if (linked === null) return LINKED_INVOICE_UNKNOWN;
  return (await payments.holdLinked(uow, paymentId, linked)) === 'taken' ? LINKED_INVOICE_TAKEN : null;
}

/**
 * In one unit of work: holds every linked invoice and submits the payment with its outbox event,
 * or holds none, refuses the payment and owes the ministry its cancellation. `moved` when another
 * actor moved the payment first.
 */
async function holdLinkedOrRefuse(
  deps: SubmitStores,
  uow: UnitOfWork,
  input: { payment: PaymentRow; refNum: string; linked: string[] | null; why: PaymentChange; at: Date },
): Promise<'moved' | 'refused' | 'submitted'> {
  const { payment, refNum, linked, why, at } = input;
  if (!(await deps.payments.lockFor(uow, payment.id, 'ministry_accepted'))) return 'moved';
  const refusal = await holdOrRefusal(deps.payments, uow, payment.id, linked);
  if (refusal) {
    await deps.payments.move(uow, payment.id, 'linked_invoice_taken', at, why, { failureReason: refusal });
    await deps.payments.releaseInvoices(uow, payment.id, null);
    await deps.cancellations.add(uow, { paymentId: payment.id, source: payment.source, refNum, reason: refusal, dueAt: at });
    return 'refused';
  }
  await deps.payments.move(uow, payment.id, 'ministry_accepted', at, why, { nextCheckAt: at });
  await deps.events.append(uow, payment.partner_id, { event: 'payment.submitted', data: { id: payment.id, invoiceId: payment.invoice_id, partnerReference: payment.partner_reference } });
  return 'submitted';
}

/**
 * A submit that reached the ministry after the check had ended the payment here as never received
 * (a request frozen before its submit went out): the ministry now holds a payment the service
 * will never confirm, so it is owed a cancellation there, as a refused linked payment is.
 */
async function cancelIfNeverReceived(deps: PaymentSubmitterDeps, payment: PaymentRow, refNum: string, at: Date): Promise<void> {
  const current = await deps.payments.findById(payment.id);
  if (current?.status !== 'failed' || current.status_event !== 'never_received') return;
  await deps.payments.transaction((uow) => deps.cancellations.add(uow, { paymentId: payment.id, source: payment.source, refNum, reason: ACCEPTED_AFTER_END, dueAt: at }));
  deps.log.warn({ paymentId: payment.id }, 'the ministry accepted a payment that had failed here as never received; canceling it at the ministry');
  await deps.ministryCancellation.attempt({ payment_id: payment.id, source: payment.source, ref_num: refNum, attempts: 0 });
}

/**
 * The ministry still has no record of the payment at the end of the wait for its submit: it is
 * failed here and, in the same transaction, a cancellation by payment id is owed there, so a
 * submit that reaches the ministry later still is canceled (the cancel is harmless when it never does).
 */
async function failNeverKnown(deps: PaymentSubmitterDeps, payment: PaymentRow, refNum: string, cause: PaymentCause, at: Date): Promise<void> {
  const why = { cause, detail: { ministry: 'unknown' } };
  const failed = await deps.payments.transaction(async (uow) => {
    const moved = await deps.payments.move(uow, payment.id, 'never_received', at, why, { failureReason: effectsOf('never_received').failureReason });
    if (!moved) return false;
    await deps.payments.releaseInvoices(uow, payment.id, null);
    await deps.cancellations.add(uow, { paymentId: payment.id, source: payment.source, refNum, reason: NEVER_KNOWN, dueAt: at });
    return true;
  });
  if (!failed) return;
  deps.log.warn({ paymentId: payment.id }, 'the ministry never knew a pending payment within the wait; failed here, its cancellation owed there');
  await deps.ministryCancellation.attempt({ payment_id: payment.id, source: payment.source, ref_num: refNum, attempts: 0 });
}

/**
 * Sends a pending payment to its ministry and records the answer. An accepted payment takes every
 * invoice the ministry settles with it, or none: if one is held by another payment or paid, the
 * payment is refused and, in the same transaction, a cancellation at the ministry is owed.
 */
export function createPaymentSubmitter(deps: PaymentSubmitterDeps) {
  const { now } = deps;

  async function refuse(payment: PaymentRow, event: PaymentTrigger, reason: string, why: PaymentChange): Promise<void> {
    await deps.payments.transaction(async (uow) => {
      const moved = await deps.payments.move(uow, payment.id, event, now(), why, { failureReason: reason });
      if (moved) await deps.payments.releaseInvoices(uow, payment.id, null);
    });
  }

  /** Accepted with linked invoices: all of them are held in one transaction, or the payment is refused. */
  async function acceptWithLinked(payment: PaymentRow, invoice: InvoiceRow, linked: string[] | null, why: PaymentChange): Promise<PaymentDetail | null> {
    const at = now();
    const outcome = await deps.payments.transaction((uow) => holdLinkedOrRefuse(deps, uow, { payment, refNum: invoice.ref_num, linked, why, at }));
    if (outcome === 'refused') {
      deps.log.warn({ paymentId: payment.id }, 'payment refused: a linked invoice is taken; canceling it at the ministry');
      // One attempt now, so the ministry usually knows before the partner does; the job retries.
      await deps.ministryCancellation.attempt({ payment_id: payment.id, source: payment.source, ref_num: invoice.ref_num, attempts: 0 });
      return null;
    }
    if (outcome === 'moved') return null;
    await deps.invoices.recordAccess(payment.partner_id, (linked ?? []).map((id) => ({ id })));
    return deps.payments.findById(payment.id);
  }

  async function accept(payment: PaymentRow, invoice: InvoiceRow, linkedRefNums: string[], cause: PaymentCause): Promise<PaymentDetail | null> {
    const submitted = await recordAcceptance(payment, invoice, linkedRefNums, cause);
    if (!submitted) await cancelIfNeverReceived(deps, payment, invoice.ref_num, now());
    return submitted;
  }

  async function recordAcceptance(payment: PaymentRow, invoice: InvoiceRow, linkedRefNums: string[], cause: PaymentCause): Promise<PaymentDetail | null> {
    const why = { cause, detail: { ministry: 'accepted', linkedRefNums } };
    const linked = await linkedInvoices(deps, invoice.source, linkedRefNums.filter((r) => r !== invoice.ref_num));
    // An unknown linked invoice takes the same path as a taken one: nothing can be held for it.
    if (linked === null || linked.length > 0) return acceptWithLinked(payment, invoice, linked, why);
    const at = now();
    return deps.payments.markSubmitted({
      id: payment.id,
      at,
      // Due at once: the next pass checks it, and then every interval while the citizen pays.
      nextCheckAt: at,
      outbox: deps.events.outbox({ event: 'payment.submitted', data: { id: payment.id, invoiceId: payment.invoice_id, partnerReference: payment.partner_reference } }),
      why,
    });
  }

  return {
    /**
     * Asks the ministry to accept a pending payment. The payment id makes the call idempotent at the
     * ministry, so a retry after a timeout or a crash gets the first answer, linked invoices included.
     * Returns the submitted payment, or null when it was refused or another actor moved it first.
     */
    async submit(payment: PaymentRow, invoice: InvoiceRow, cause: PaymentCause): Promise<PaymentDetail | null> {
      let result;
      try {
        result = await deps.ministries[invoice.source].submitPayment({ paymentId: payment.id, refNum: invoice.ref_num, amount: payment.amount });
      } catch (err) {
        throw new UpstreamUnavailableError(`submit of payment ${payment.id} failed`, { cause: err });
      }
      if (result.accepted) return accept(payment, invoice, result.linkedRefNums, cause);
      await refuse(payment, 'ministry_refused', result.reason, { cause, detail: { ministry: 'refused', reason: result.reason } });
      return null;
    },

    neverReceived: (payment: PaymentRow, refNum: string, cause: PaymentCause) => failNeverKnown(deps, payment, refNum, cause, now()),
  };
}

export type PaymentSubmitter = ReturnType<typeof createPaymentSubmitter>;
