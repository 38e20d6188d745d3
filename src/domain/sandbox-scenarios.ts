/**
 * The outcomes a partner can make happen in the sandbox, each planted as an invoice at the
 * simulated ministry that behaves as named. Names and descriptions are the partner API's
 * (GET /sandbox/scenarios); `plant` says how the simulated ministry is to treat the invoice.
 */
export const SANDBOX_SCENARIOS = [
  'approve',
  'approve-later',
  'reject',
  'fail-after-submit',
  'ministry-unavailable',
  'never-approve',
  'partial',
  'linked',
  'already-paid',
] as const;
export type SandboxScenario = (typeof SANDBOX_SCENARIOS)[number];

export const SCENARIO_DESCRIPTIONS: Record<SandboxScenario, string> = {
  approve: 'Accepted; approved by POST /sandbox/approve (or the simulated ministry\'s auto-approval).',
  'approve-later': 'Accepted; the ministry approves it delaySeconds (default 30) after the payment, with no call from you.',
  reject: 'POST /payments answers 422 { success: false, refNum, message }: the ministry refuses the payment.',
  'fail-after-submit': 'Accepted (201, submitted), then the ministry fails it: GET /payments/{id} after 2 s shows failed; no payment.confirmed is sent.',
  'ministry-unavailable':
    'For durationSeconds (default 30) from the invoice\'s creation, paying it answers 503 and the payment stays pending; a retry with the same X-Idempotency-Key after that answers 201 with the same payment.',
  'never-approve': 'Accepted and never approved: it expires as an unpaid payment does, or delaySeconds after the payment when given.',
  partial: 'The ministry takes part-payments: pay less than the amount and the rest stays open.',
  linked: 'Two invoices of the same payer that the ministry settles together; paying the first gives invoiceIds with both.',
  'already-paid': 'The invoice reads paid; paying it answers 422.',
};

/** How long the ministry waits before approving an `approve-later` payment, unless delaySeconds says otherwise. */
export const DEFAULT_APPROVE_LATER_SECONDS = 30;
/** How long an `ministry-unavailable` invoice's ministry stays down, unless durationSeconds says otherwise. */
export const DEFAULT_UNAVAILABLE_SECONDS = 30;
/** How long after accepting it the ministry fails a `fail-after-submit` payment: under the 2 s the partner is promised. */
export const FAIL_AFTER_SUBMIT_SECONDS = 1;
export const DEFAULT_SANDBOX_AMOUNT = 10000;

/** What the simulated ministry is told about a scenario's invoice. */
export interface ScenarioPlan {
  status: 'open' | 'paid';
  rejectPayment: boolean;
  allowPartial: boolean;
  /** A second invoice of the same payer, settled together with the first. */
  linked: boolean;
  behaviour: { approveAfterSeconds?: number; failAfterSeconds?: number; neverApprove?: boolean; unavailableSeconds?: number } | null;
  /** How long after submission its payments expire unpaid; null for the service's usual bound. */
  paymentExpiryMs: number | null;
}

export function planScenario(scenario: SandboxScenario, opts: { delaySeconds?: number; durationSeconds?: number }): ScenarioPlan {
  const plan: ScenarioPlan = { status: 'open', rejectPayment: false, allowPartial: false, linked: false, behaviour: null, paymentExpiryMs: null };
  switch (scenario) {
    case 'approve':
      return plan;
    case 'approve-later':
      return { ...plan, behaviour: { approveAfterSeconds: opts.delaySeconds ?? DEFAULT_APPROVE_LATER_SECONDS } };
    case 'reject':
      return { ...plan, rejectPayment: true };
    case 'fail-after-submit':
      return { ...plan, behaviour: { failAfterSeconds: FAIL_AFTER_SUBMIT_SECONDS } };
    case 'ministry-unavailable':
      return { ...plan, behaviour: { unavailableSeconds: opts.durationSeconds ?? DEFAULT_UNAVAILABLE_SECONDS } };
    case 'never-approve':
      return { ...plan, behaviour: { neverApprove: true }, paymentExpiryMs: opts.delaySeconds === undefined ? null : opts.delaySeconds * 1000 };
    case 'partial':
      return { ...plan, allowPartial: true };
    case 'linked':
      return { ...plan, linked: true };
    case 'already-paid':
      return { ...plan, status: 'paid' };
  }
}
