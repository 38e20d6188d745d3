import { createHash, randomUUID } from 'node:crypto';
import { InvalidRequestError, ConflictError, NotFoundError, PaymentRejectedError, UnprocessableError, UpstreamUnavailableError, failedPaymentCode, replayedRefusalCode } from '../domain/errors.js';
import { effectiveInvoiceStatus, isPayable } from '../domain/invoice-status.js';
import { amountToNumber, canonicalAmount, compareAmounts, requestedAmount } from '../domain/money.js';
import type { InvoiceRepository, InvoiceRow } from '../db/repositories/invoice.repository.js';
import type { PaymentDetail, PaymentRepository, PaymentRow } from './payment.repository.js';
import type { IdempotencyAnswer, IdempotencyLease, IdempotencyRepository, StoredOutcome } from '../db/repositories/idempotency.repository.js';
import type { MinistryAdapters } from '../domain/ministry.port.js';
import type { PaymentSubmitter } from './payment-submit.service.js';
import { settledWithin, type PaymentLiveCheck, type StatusSource } from './payment-live-check.service.js';
import type { PaymentCancelService } from './payment-cancel.service.js';
import type { PaymentBody, PaymentCreatedBody, PaymentFailedBody } from '../schemas/payment.schema.js';
import type { Logger } from '../domain/logger.port.js';
import type { Tracer } from '../domain/tracer.port.js';
import { billNumberFor, type QrBuildInput, type QrService } from './qr.service.js';
import type { Clock } from '../domain/clock.port.js';
import { EmvcoPayloadError } from '../domain/emvco-qr.js';
import type { QrStandard, StaleLeaseReport } from '../domain/vocabulary.js';

/** The partner paying, as the partner API authenticated it: its id and its QR standard are all a payment takes of it. */
export interface PayingPartner {
  id: string;
  qrStandard: QrStandard;
}

/** A payment the ministry accepted, or one it refused: both are answers a replay repeats. */
export type CreateOutcome =
  | { kind: 'created'; body: PaymentCreatedBody; replayed: boolean }
  | { kind: 'rejected'; body: RefusalBody; replayed: boolean };

/** The 422 refusal as stored and replayed: the HTTP layer adds the answer's own `requestId`. */
export type RefusalBody = Omit<PaymentFailedBody, 'requestId'>;

export interface PaymentServiceDeps {
  payments: PaymentRepository;
  invoices: InvoiceRepository;
  idempotency: IdempotencyRepository;
  ministries: MinistryAdapters;
  submitter: PaymentSubmitter;
  /** GET /payments/{id}'s ask of the ministry, within its limits. */
  liveCheck: PaymentLiveCheck;
  cancels: PaymentCancelService;
  qr: QrService;
  log: Logger;
  /** A read's live check answers within this + 1 s. */
  ministryTimeoutMs: number;
  idempotencyTtlMs: number;
  /**
   * How long a request holds its idempotency key before another may take it over
   * (LeasePolicy.idempotency); a new pending payment waits as long for its first check.
   */
  idempotencyLeaseMs: number;
  onStaleLease?: StaleLeaseReport;
  /** The request's trace, stored with a new payment so its background work continues it. */
  tracer?: Tracer;
  now: Clock;
  /** Monotonic milliseconds for a read's deadline; the injected clock may jump. */
  elapsed?: () => number;
  /** A new payment's id; it is chosen before the insert because the QR payload carries it. */
  newId?: () => string;
}

const IN_PROGRESS = 'Another payment for this invoice is in progress';
const KEY_IN_FLIGHT = 'A request with this idempotency key is still in progress';

/**
 * Kept from a read's ministry timeout + 1 s for what follows the live check (the answer's
 * serialization, the request's own way in and out), so the partner has an answer within that.
 */
const READ_ANSWER_MARGIN_MS = 500;

/**
 * What makes two requests under one idempotency key the same; a request without an end user hashes
 * as it always did, and one without a partner reference as it did before references existed.
 */
function requestHash(invoiceId: string, amount: number | undefined, userId: string | undefined, partnerReference: string | undefined): string {
  const parts =
    partnerReference !== undefined
      ? [invoiceId, amount ?? null, userId ?? null, { partnerReference }]
      : userId === undefined
        ? [invoiceId, amount ?? null]
        : [invoiceId, amount ?? null, userId];
  return createHash('sha256').update(JSON.stringify(parts)).digest('hex');
}

export function toPaymentView(p: PaymentDetail): PaymentBody {
  const view: PaymentBody = {
    id: p.id,
    status: p.status,
    amount: amountToNumber(p.amount),
    invoiceId: p.invoice_id,
    invoiceIds: p.invoiceIds,
    partnerReference: p.partner_reference,
  };
  if (p.status === 'confirmed' && p.paid_at) view.paidAt = p.paid_at.toISOString();
  return view;
}

/** What a payment's QR is built from: the payment, its invoice's payee and the partner's standard. */
function qrInputOf(paymentId: string, amount: string, invoice: InvoiceRow, standard: QrStandard): QrBuildInput {
  return { standard, source: invoice.source, paymentId, amount, payeeId: invoice.payee_id, payeeName: invoice.payee_name, billNumber: billNumberFor(paymentId) };
}

export interface CreateInput {
  invoiceId: string;
  amount?: number;
  userId?: string;
  /** The partner's own reference of the payment (X-Partner-Reference). */
  partnerReference?: string;
}

function requireInvoice(row: InvoiceRow | null): InvoiceRow {
  if (!row) throw new NotFoundError('Invoice');
  return row;
}

function resolveAmount(invoice: InvoiceRow, requested: number | undefined): string {
  if (requested === undefined) return canonicalAmount(invoice.amount);
  const amount = requestedAmount(requested);
  if (amount === null) throw new InvalidRequestError(['amount must be a positive number with at most 2 decimals'], '/amount');
  if (compareAmounts(amount, invoice.amount) > 0) {
    throw new PaymentRejectedError(invoice.ref_num, 'Amount does not match the invoice balance', 'amount_not_accepted');
  }
  return amount;
}

/**
 * The new payment's QR payload, built before anything is written or sent: a payment the service
 * could not show a QR for must never reach the ministry.
 */
function qrTextFor(qr: QrService, paymentId: string, invoice: InvoiceRow, amount: string, standard: QrStandard): string {
  try {
    return qr.payload(qrInputOf(paymentId, amount, invoice, standard));
  } catch (err) {
    if (err instanceof EmvcoPayloadError) throw new PaymentRejectedError(invoice.ref_num, `The payment cannot be carried by an EMVCo QR: ${err.message}`, 'amount_not_accepted');
    throw err;
  }
}

/** The QR the payment was created with; one stored without it gets the QR its inputs give today. */
function createdBody(qr: QrService, payment: PaymentDetail, invoice: InvoiceRow, standard: QrStandard): PaymentCreatedBody {
  const qrpay = qr.forPayment(payment.qr_text, qrInputOf(payment.id, payment.amount, invoice, standard));
  return { success: true, ...toPaymentView(payment), qrpay };
}

/** The stored answer as a replay gives it; one stored before partner references came with none. */
function replayOf(answer: Extract<IdempotencyAnswer, { kind: 'replay' }>): CreateOutcome {
  if (answer.outcome === 'rejected') {
    // The code is stored with the refusal; one stored before codes existed is given it by its reason.
    const body = answer.body as RefusalBody;
    return { kind: 'rejected', body: { ...body, code: replayedRefusalCode(body.code, body.message) }, replayed: true };
  }
  const body = answer.body as PaymentCreatedBody;
  return { kind: 'created', body: { ...body, partnerReference: body.partnerReference ?? null, message: 'idempotent' }, replayed: true };
}

export function createPaymentService(deps: PaymentServiceDeps) {
  const { now } = deps;
  const elapsed = deps.elapsed ?? (() => performance.now());
  const readWithinMs = deps.ministryTimeoutMs + 1000 - READ_ANSWER_MARGIN_MS;
  const newId = deps.newId ?? randomUUID;
  // A pending payment is left alone while the request that made it may still submit it: the lease
  // on a request's key covers its reads, the insert, the submit and the writes that record it.
  const pendingGraceMs = deps.idempotencyLeaseMs;

  async function createPending(partnerId: string, invoice: InvoiceRow, amount: string, lease: IdempotencyLease | null, input: CreateInput, standard: QrStandard): Promise<PaymentRow> {
    const id = newId();
    deps.tracer?.annotate({ 'payment.id': id });
    const payment = await deps.payments.insertPending({
      id,
      qrText: qrTextFor(deps.qr, id, invoice, amount, standard),
      partnerId,
      invoiceId: invoice.id,
      source: invoice.source,
      amount,
      nextCheckAt: new Date(now().getTime() + pendingGraceMs),
      lease: lease ?? undefined,
      userId: input.userId,
      partnerReference: input.partnerReference,
      trace: deps.tracer?.active() ?? null,
    });
    if (payment === 'invoice_held') throw new PaymentRejectedError(invoice.ref_num, IN_PROGRESS, 'invoice_not_payable');
    // The key was taken over while this request stalled: the request that took it answers for it.
    if (payment === 'lease_lost') throw new ConflictError(KEY_IN_FLIGHT, 'idempotency_key_in_use');
    return payment;
  }

  /** `submitted` is the row submit() just wrote, when it did; otherwise the payment is read again. */
  async function outcomeOf(paymentId: string, invoice: InvoiceRow, standard: QrStandard, submitted: PaymentDetail | null): Promise<CreateOutcome> {
    const payment = submitted ?? (await deps.payments.findById(paymentId));
    if (!payment) throw new NotFoundError('Payment');
    if (payment.status === 'failed') {
      const message = payment.failure_reason ?? 'Payment was not accepted';
      return { kind: 'rejected', body: { success: false, refNum: invoice.ref_num, message, code: failedPaymentCode(payment.status_event, payment.failure_reason) }, replayed: false };
    }
    if (payment.status === 'pending') throw new UpstreamUnavailableError(`payment ${paymentId} still pending`);
    return { kind: 'created', body: createdBody(deps.qr, payment, invoice, standard), replayed: false };
  }

  /**
   * The pending payment an earlier request under the key left, submitted again: the payment id
   * makes the submit idempotent at the ministry, so a stalled request's submit arriving too gets
   * the same answer and no second payment. The check is pushed out under the key's token first,
   * so the confirmation job does not conclude the ministry never received it meanwhile.
   */
  async function resume(partner: PayingPartner, paymentId: string, lease: IdempotencyLease): Promise<CreateOutcome> {
    const existing = await deps.payments.findById(paymentId);
    const invoice = requireInvoice(existing ? await deps.invoices.findById(existing.invoice_id) : null);
    const hold = existing?.status === 'pending' ? await deps.payments.holdPendingForKey(paymentId, lease, new Date(now().getTime() + pendingGraceMs)) : 'not_pending';
    if (hold === 'lease_lost') throw new ConflictError(KEY_IN_FLIGHT, 'idempotency_key_in_use');
    const submitted = existing && hold === 'held' ? await deps.submitter.submit(existing, invoice, 'partner_request') : null;
    return outcomeOf(paymentId, invoice, partner.qrStandard, submitted);
  }

  /** A payment's creation: a new pending payment sent to its ministry, or one a key's earlier request left pending. */
  async function execute(partner: PayingPartner, input: CreateInput, lease: IdempotencyLease | null, resumeId: string | null): Promise<CreateOutcome> {
    const { invoiceId, amount: requested } = input;
    if (resumeId && lease) return resume(partner, resumeId, lease);
    const invoice = requireInvoice(await deps.invoices.findForPartner(partner.id, invoiceId));
    const status = effectiveInvoiceStatus(invoice.status, invoice.due_date, now());
    if (!isPayable(status)) throw new PaymentRejectedError(invoice.ref_num, `Invoice is already ${status}`, 'invoice_not_payable');
    const amount = resolveAmount(invoice, requested);
    const payment = await createPending(partner.id, invoice, amount, lease, input, partner.qrStandard);
    return outcomeOf(payment.id, invoice, partner.qrStandard, await deps.submitter.submit(payment, invoice, 'partner_request'));
  }

  /** False when the key was taken over; a release that failed (the database is away) leaves the key to its lease. */
  async function releaseOrLeave(lease: IdempotencyLease): Promise<boolean> {
    try {
      return await deps.idempotency.release(lease, now());
    } catch (e) {
      deps.log.warn({ reason: e instanceof Error ? e.message : String(e) }, 'idempotency release failed; the key frees when its lock expires');
      return true;
    }
  }

  /** The request that took the key over answers for it: its stored answer, or 409 while it is still at work. */
  async function answerOfNewHolder(lease: IdempotencyLease, hash: string): Promise<CreateOutcome> {
    deps.onStaleLease?.('idempotency_key', `${lease.partnerId}/${lease.key}`);
    const answer = await deps.idempotency.answerFor(lease.partnerId, lease.key, hash);
    if (answer.kind === 'replay') return replayOf(answer);
    throw new ConflictError(KEY_IN_FLIGHT, 'idempotency_key_in_use');
  }

  /**
   * A creation under an idempotency key: the first request's answer is kept, and a repeat gets it
   * again. The request holds the key under a lease whose token it presents to create the payment,
   * store the answer or give the key back; one that stalled past its lease (a GC pause, a frozen
   * VM) and lost the key to a retry changes nothing and answers as the retry did.
   */
  async function withIdempotency(partner: PayingPartner, key: string, input: CreateInput): Promise<CreateOutcome> {
    const at = now();
    const hash = requestHash(input.invoiceId, input.amount, input.userId, input.partnerReference);
    const claim = await deps.idempotency.claim({
      partnerId: partner.id,
      key,
      requestHash: hash,
      now: at,
      lockUntil: new Date(at.getTime() + deps.idempotencyLeaseMs),
      expiresAt: new Date(at.getTime() + deps.idempotencyTtlMs),
    });
    if (claim.kind === 'mismatch') throw new UnprocessableError('Idempotency key was already used with a different request');
    if (claim.kind === 'in_flight') throw new ConflictError(KEY_IN_FLIGHT, 'idempotency_key_in_use');
    if (claim.kind === 'replay') return replayOf(claim);
    const lease: IdempotencyLease = { partnerId: partner.id, key, token: claim.token };
    try {
      const outcome = await execute(partner, input, lease, claim.paymentId);
      if (await deps.idempotency.complete(lease, outcome.kind satisfies StoredOutcome, outcome.body)) return outcome;
    } catch (err) {
      if (await releaseOrLeave(lease)) throw err;
    }
    return answerOfNewHolder(lease, hash);
  }

  return {
    /** `userId` is the partner's end user (X-User-Id): their devices are pushed once the payment is confirmed. */
    async create(partner: PayingPartner, input: CreateInput, idemKey: string | undefined): Promise<CreateOutcome> {
      if (idemKey) return withIdempotency(partner, idemKey, input);
      return execute(partner, input, null, null);
    },

    /**
     * Live confirmation first for an unresolved payment (payment-live-check.service): the status
     * of a ministry answer given after the read arrived, `live`. When no such answer comes by the
     * ministry timeout + 1 s (no slot freed in time, the breaker is open, the check failed or
     * outlived its deadline), and for a payment already final in the books, the stored status.
     */
    async get(partnerId: string, id: string): Promise<{ body: PaymentBody; source: StatusSource }> {
      const startedAt = elapsed();
      const payment = await deps.payments.findForPartner(partnerId, id);
      if (!payment) throw new NotFoundError('Payment');
      const due = payment.status === 'submitted' || (payment.status === 'pending' && (payment.next_check_at?.getTime() ?? 0) <= now().getTime());
      if (!due) return { body: toPaymentView(payment), source: 'stored' };
      const withinMs = startedAt + readWithinMs - elapsed();
      const answer = await settledWithin(deps.liveCheck.read(payment, withinMs), withinMs);
      return { body: toPaymentView(answer?.payment ?? payment), source: answer?.payment ? answer.source : 'stored' };
    },

    /** The partner's cancel: recorded before the ministry is asked (payment-cancel.service). */
    cancel: (partnerId: string, id: string) => deps.cancels.cancel(partnerId, id),
  };
}

export type PaymentService = ReturnType<typeof createPaymentService>;
