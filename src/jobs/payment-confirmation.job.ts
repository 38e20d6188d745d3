import type { Job } from './job-runner.js';
import { createKeyedPool } from './keyed-pool.js';
import { nextCheckDelayMs, type CheckSchedule } from '../domain/check-schedule.js';
import type { PaymentRepository, PaymentRow } from '../db/repositories/payment.repository.js';
import type { MinistryCancellationRepository } from '../db/repositories/ministry-cancellation.repository.js';
import type { PaymentResolver } from '../services/payment-resolution.service.js';
import type { MinistryCancellationService } from '../services/ministry-cancellation.service.js';
import { SOURCES } from '../ministry/ministry.types.js';
import type { Logger } from '../services/logger.js';

export interface PaymentConfirmationJobDeps {
  payments: PaymentRepository;
  cancellations: MinistryCancellationRepository;
  resolver: PaymentResolver;
  ministryCancellation: MinistryCancellationService;
  schedule: CheckSchedule;
  /** Checks in flight per ministry system, per instance. */
  concurrencyPerSource: number;
  /** How long a claim stays ours: longer than any one check can take. */
  leaseMs: number;
  log: Logger;
  now?: () => Date;
}

/**
 * Checks unresolved payments with their ministry and retries owed ministry cancellations. Work is
 * claimed per ministry system, only as much as that system has free slots, and runs beside later
 * passes: a slow or failing system fills its own slots and never delays another system's checks.
 * Claims use SKIP LOCKED and a lease (next_check_at pushed forward), so any number of instances
 * can run this at once.
 */
export function createPaymentConfirmationJob(deps: PaymentConfirmationJobDeps): Job {
  const now = deps.now ?? (() => new Date());
  const pool = createKeyedPool({
    perKey: deps.concurrencyPerSource,
    total: deps.concurrencyPerSource * SOURCES.length,
    onError: (err, source) => deps.log.warn({ err, source }, 'confirmation check failed'),
  });
  // Due a little early, so the pass one interval later always finds it due.
  const slackMs = Math.floor(deps.schedule.intervalMs / 10);

  const freeSlots = () => Object.fromEntries(SOURCES.map((s) => [s, pool.available(s)]));

  async function checkPayment(payment: PaymentRow, claimedAt: Date): Promise<void> {
    try {
      await deps.resolver.check(payment);
    } finally {
      const delay = nextCheckDelayMs(payment.check_attempts, deps.schedule) - slackMs;
      await deps.payments.reschedule(payment.id, new Date(claimedAt.getTime() + delay));
    }
  }

  return {
    name: 'payment-confirmation',
    intervalMs: deps.schedule.intervalMs,
    async run() {
      const at = now();
      const leaseUntil = new Date(at.getTime() + deps.leaseMs);
      const owed = await deps.cancellations.claimDue(at, leaseUntil, freeSlots());
      owed.forEach((row) => pool.tryRun(row.source, () => deps.ministryCancellation.attempt(row)));
      const due = await deps.payments.claimDue(at, leaseUntil, freeSlots());
      due.forEach((payment) => pool.tryRun(payment.source, () => checkPayment(payment, at)));
    },
    drain: () => pool.idle(),
  };
}
