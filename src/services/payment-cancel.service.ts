import { NotFoundError, UpstreamUnavailableError } from '../domain/errors.js';
import { IllegalTransitionError } from '../domain/payment-transitions.js';
import type { InvoiceRepository } from '../db/repositories/invoice.repository.js';
import type { PaymentRepository } from '../db/repositories/payment.repository.js';
import type { MinistryCancellationRepository } from '../db/repositories/ministry-cancellation.repository.js';
import { systemClock, type Clock } from '../domain/clock.port.js';
import type { Source } from '../domain/vocabulary.js';

/**
 * Closes a partner's cancel once the ministry has confirmed it: the payment moves to canceled, its
 * invoices are released and the intent is closed, in one transaction. A payment another actor
 * moved meanwhile (expired, canceled by the ministry) closes the intent without a move.
 */
export function createPartnerCancelFinisher(deps: Pick<PaymentCancelDeps, 'payments' | 'cancellations' | 'now'>) {
  const now = deps.now ?? systemClock;
  return async function finish(paymentId: string): Promise<void> {
    await deps.payments.transaction(async (uow) => {
      const at = now();
      const row = await deps.payments.move(uow, paymentId, 'partner_canceled', at, { cause: 'partner_request', detail: { ministry: 'canceled' } }, { canceledAt: at });
      // Only invoices this payment had paid reopen; the invoice table's guard leaves the rest.
      if (row) await deps.payments.releaseInvoices(uow, paymentId, 'payment_canceled');
      await deps.cancellations.markDone(paymentId, at, uow);
    });
  };
}

export interface PaymentCancelDeps {
  payments: PaymentRepository;
  invoices: InvoiceRepository;
  cancellations: MinistryCancellationRepository;
  /** One attempt at the ministry; on success the finisher above closes the cancel (see ministry-cancellation.service). */
  attempt(row: { payment_id: string; source: Source; ref_num: string; attempts: number; kind: 'partner' }): Promise<boolean>;
  /** How long the request has to finish its own attempt before the job may take the intent. */
  graceMs: number;
  now?: Clock;
}

/**
 * The partner's cancel. The intent is written first, in the transaction that finds the payment
 * cancelable, so the ministry is never asked to cancel a payment the service has no record of
 * canceling: if the process dies after the ministry's answer and before the local move, the
 * confirmation job finds the intent, asks the ministry again (a cancel is idempotent there) and
 * makes the move.
 */
export function createPaymentCancelService(deps: PaymentCancelDeps) {
  const now = deps.now ?? systemClock;

  return {
    async cancel(partnerId: string, id: string): Promise<{ id: string; canceled: true }> {
      const payment = await deps.payments.findForPartner(partnerId, id);
      if (!payment) throw new NotFoundError('Payment');
      const invoice = await deps.invoices.findById(payment.invoice_id);
      if (!invoice) throw new NotFoundError('Invoice');
      const recorded = await deps.payments.transaction(async (uow) => {
        if (!(await deps.payments.lockFor(uow, id, 'partner_canceled'))) return false;
        await deps.cancellations.addPartnerIntent(uow, { paymentId: id, source: payment.source, refNum: invoice.ref_num, dueAt: new Date(now().getTime() + deps.graceMs) });
        return true;
      });
      if (!recorded) {
        const current = await deps.payments.findById(id);
        throw new IllegalTransitionError(current?.status ?? payment.status, 'partner_canceled');
      }
      const intent = await deps.cancellations.find(id);
      const attempts = intent?.attempts ?? 0;
      // The intent stays on failure: the job retries it, and a repeated DELETE tries again at once.
      if (!(await deps.attempt({ payment_id: id, source: payment.source, ref_num: invoice.ref_num, attempts, kind: 'partner' }))) {
        throw new UpstreamUnavailableError(`cancel of payment ${id} failed; it is recorded and will be completed`);
      }
      const after = await deps.payments.findById(id);
      if (after?.status !== 'canceled') {
        throw new IllegalTransitionError(after?.status ?? payment.status, 'partner_canceled');
      }
      return { id, canceled: true };
    },
  };
}

export type PaymentCancelService = ReturnType<typeof createPaymentCancelService>;
