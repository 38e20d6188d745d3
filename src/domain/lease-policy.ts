/**
 * Every lease the service takes, and every deadline of a background pass, in one place. A lease
 * protects a piece of work from a second holder: it must outlast the longest that work can take
 * before its last outside effect (a ministry call, a webhook attempt, a push), or a second instance
 * repeats that effect while the first is still making it. Each piece of work is bounded by the
 * deadlines of what it waits on, so each lease is derived from those deadlines, never chosen where
 * it is used. Writes after the effect are fenced by the lease token, so they need no cover.
 */
export interface WorkDeadlines {
  /** A database query's deadline (DB_QUERY_TIMEOUT_MS). */
  queryMs: number;
  /** A ministry call's timeout (MINISTRY_TIMEOUT_MS). */
  ministryMs: number;
  /** A webhook attempt's timeout (WEBHOOK_TIMEOUT_MS). */
  webhookMs: number;
  /** A push's timeout. */
  pushMs: number;
  /** The hold reconciliation takes on a day and system, renewed before each ministry call (RECONCILE_LEASE_MS). */
  reconcileMs: number;
}

/** Room for the event loop and the network between the deadlines a piece of work waits on. */
export const LEASE_MARGIN_MS = 1000;

export interface LeasePolicy {
  /** A payment's check: a status call, then a submit or a cancel; or an owed cancellation. */
  confirmation: number;
  /** A partner's live read of a payment: one status call. */
  statusCheck: number;
  /** A partner's cancel: its own cancel call at the ministry, before the job may take the intent over. */
  partnerCancel: number;
  /** One webhook delivery attempt. */
  webhook: number;
  /** One push. */
  push: number;
  /** A payment request under an idempotency key: reads and the pending insert, the submit, and the writes that record it. */
  idempotency: number;
  /** A reconciliation of one day and system, between renewals. */
  reconciliation: number;
  /**
   * A case's evidence: the status, invoice and settlement calls side by side, then a confirmation
   * of the payment the ministry confirms (a balance read) or a pending one's check (status, submit).
   */
  caseEvidence: number;
  /**
   * How long each background loop's pass may run before it is abandoned: the statements it runs
   * one after the other, each within the query deadline. The leased loops' passes only claim; the
   * work they start is bounded by its own deadlines and leases. Reconciliation's pass makes a
   * ministry call per payment of a day, so its deadline counts from its last lease renewal.
   */
  passes: Record<'confirmation' | 'webhooks' | 'pushes' | 'webhookHealth' | 'retention' | 'counterRollup' | 'eventPositions' | 'reconciliation' | 'cases', number>;
}

export function createLeasePolicy(d: WorkDeadlines): LeasePolicy {
  // The reads before an outside call are bounded by one query deadline: the first to pass it ends the work.
  const around = (calls: number, callMs: number) => d.queryMs + calls * callMs + LEASE_MARGIN_MS;
  const statements = (n: number) => n * d.queryMs + LEASE_MARGIN_MS;
  const reconciliation = Math.max(d.reconcileMs, around(1, d.ministryMs));
  const caseEvidence = statements(4) + around(3, d.ministryMs);
  return {
    confirmation: around(2, d.ministryMs),
    statusCheck: around(1, d.ministryMs),
    partnerCancel: around(1, d.ministryMs),
    webhook: around(1, d.webhookMs),
    push: around(1, d.pushMs),
    idempotency: d.queryMs + around(2, d.ministryMs),
    reconciliation,
    caseEvidence,
    passes: {
      confirmation: statements(2),
      webhooks: statements(2),
      pushes: statements(1),
      webhookHealth: statements(1),
      retention: statements(6),
      counterRollup: statements(20),
      // The check, then per batch (five at most) the lock, the update and `last`.
      eventPositions: statements(16),
      reconciliation,
      // The claim, the batch's evidence side by side, then the escalation's one transaction.
      cases: statements(2) + caseEvidence,
    },
  };
}
