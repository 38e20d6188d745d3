import type { Job } from './job-runner.js';
import type { PaymentRepository } from '../db/repositories/payment.repository.js';
import type { PaymentService } from '../services/payment.service.js';
import type { Logger } from '../services/logger.js';

/**
 * Polls the ministry for pending and submitted payments. Claiming rows with SKIP LOCKED and a
 * lease (next_check_at pushed forward) lets any number of instances run this at once.
 */
export function createPaymentConfirmationJob(deps: {
  payments: PaymentRepository;
  service: PaymentService;
  intervalMs: number;
  log: Logger;
  batchSize?: number;
  now?: () => Date;
}): Job {
  const now = deps.now ?? (() => new Date());
  return {
    name: 'payment-confirmation',
    intervalMs: deps.intervalMs,
    async run() {
      const at = now();
      const claimed = await deps.payments.claimDue(at, new Date(at.getTime() + deps.intervalMs), deps.batchSize ?? 50);
      for (const payment of claimed) {
        await deps.service.reconcile(payment).catch((err: unknown) => deps.log.warn({ err, paymentId: payment.id }, 'confirmation check failed'));
      }
    },
  };
}
