import { NotFoundError, UpstreamUnavailableError } from '../domain/errors.js';
import { IllegalTransitionError, requestedCancel } from './payment.machine.js';
import type { InvoiceRepository } from '../db/repositories/invoice.repository.js';
import type { PaymentRepository } from './payment.repository.js';
import type { MinistryCancellationRepository } from './ministry-cancellation.repository.js';
import type { Clock } from '../domain/clock.port.js';
import type { Source } from '../domain/vocabulary.js';

export interface PaymentCancelDeps {
  payments: PaymentRepository;
  invoices: InvoiceRepository;
  cancellations: MinistryCancellationRepository;
  /** One attempt at the ministry; on success the payment's move closes the cancel (see ministry-cancellation.service, payment-end.service). */
  attempt(row: { payment_id: string; source: Source; ref_num: string; attempts: number; kind: 'partner' }): Promise<boolean>;
  /** How long the request has to finish its own attempt before the job may take the intent. */
  graceMs: number;
  now: Clock;
}

/**
 * The partner's cancel. The intent is written first, in the transaction that finds the payment
 * cancelable, so the ministry is never asked to cancel a payment the service has no record of
 * canceling: if the process dies after the ministry's answer and before the local move, the
 * confirmation job finds the intent, asks the ministry again (a cancel is idempotent there) and
 * makes the move.
 */
export function createPaymentCancelService(deps: PaymentCancelDeps) {
  const { now } = deps;

  return {
    async cancel(partnerId: string, id: string): Promise<{ id: string; canceled: true }> {
      const payment = await deps.payments.findForPartner(partnerId, id);
      if (!payment) throw new NotFoundError('Payment');
      const invoice = await deps.invoices.findById(payment.invoice_id);
      if (!invoice) throw new NotFoundError('Invoice');
      const recorded = await deps.payments.transaction(async (uow) => {
        if (!(await deps.payments.lockFor(uow, id, 'partner_cancel_requested'))) return false;
        const kind = requestedCancel('partner_cancel_requested');
        await deps.cancellations.addIntent(uow, { paymentId: id, source: payment.source, refNum: invoice.ref_num, kind, dueAt: new Date(now().getTime() + deps.graceMs) });
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
