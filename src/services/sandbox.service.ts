import { ConflictError, NotFoundError, UpstreamUnavailableError } from '../domain/errors.js';
import { canMove } from '../domain/payment-transitions.js';
import type { InvoiceRepository } from '../db/repositories/invoice.repository.js';
import type { PaymentRepository } from '../db/repositories/payment.repository.js';
import type { SimulatorControl } from '../adapters/simulator-control.client.js';

/**
 * Sandbox-only helpers (APP_ENV local/sandbox; never created in production). The partner API never
 * reveals an invoice's ministry ref_num, so the sandbox page cannot drive the simulator's control
 * API itself: this service approves a partner's own submitted payment there on its behalf.
 */
export interface SandboxServiceDeps {
  payments: Pick<PaymentRepository, 'findForPartner' | 'forgetStatusCheck'>;
  invoices: Pick<InvoiceRepository, 'findById'>;
  simulator: SimulatorControl;
}

export interface SandboxApproval {
  id: string;
  approved: true;
}

export function createSandboxService(deps: SandboxServiceDeps) {
  return {
    /** Asks the simulator to approve the ministry-side payment; the status moves on the next GET /payments/{id}. */
    async approve(partnerId: string, paymentId: string): Promise<SandboxApproval> {
      const payment = await deps.payments.findForPartner(partnerId, paymentId);
      if (!payment) throw new NotFoundError('Payment');
      if (!canMove(payment.status, 'ministry_approved')) {
        throw new ConflictError(`Only a submitted payment can be approved; this one is ${payment.status}`);
      }
      const invoice = await deps.invoices.findById(payment.invoice_id);
      if (!invoice) throw new NotFoundError('Invoice');
      let answer;
      try {
        answer = await deps.simulator.approve({ refNum: invoice.ref_num, source: invoice.source });
      } catch (err) {
        throw new UpstreamUnavailableError(`simulator approve failed: ${String(err)}`, { cause: err });
      }
      // The simulator has no submitted payment for the invoice: approved already (e.g. automatically) or canceled.
      if (answer === 'unknown') throw new ConflictError('The simulator has no submitted payment for this invoice; it may be approved already');
      // The partner's next read shows the approval, however soon after its last read it comes.
      await deps.payments.forgetStatusCheck(payment.id);
      return { id: payment.id, approved: true };
    },
  };
}

export type SandboxService = ReturnType<typeof createSandboxService>;
