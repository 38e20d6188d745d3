import type { Source } from '../domain/vocabulary.js';

/** What the simulator said to an approve: `unknown` when it holds no submitted payment for the invoice. */
export type SimulatorApproval = 'approved' | 'unknown';

/** An invoice to plant at a simulated ministry, as the simulator's fixtures describe one. */
export interface SimulatorInvoice {
  source: Source;
  refNum: string;
  description: string;
  amount: number;
  status: 'open' | 'paid';
  dueDate: string;
  issuedAt: string;
  payer: { register: string; name: string };
  payee: { id: string; name: string };
  rejectPayment: boolean;
  allowPartial: boolean;
  linkedRefNums: string[];
}

/** How the simulated ministry treats an invoice's payments (see the simulator's /__control/invoices/behaviour). */
export interface SimulatorBehaviour {
  approveAfterSeconds?: number;
  failAfterSeconds?: number;
  neverApprove?: boolean;
  unavailableSeconds?: number;
}

export interface SimulatorControl {
  /** Throws when the simulator cannot be reached or answers an error. */
  approve(invoice: { refNum: string; source: Source }): Promise<SimulatorApproval>;
  /** Plants the invoices (replacing any of the same refNum); throws when the simulator refuses them. */
  plant(invoices: SimulatorInvoice[]): Promise<void>;
  /** Sets how the ministry treats the invoice's payments; throws when the simulator refuses it. */
  behave(invoice: { refNum: string; source: Source }, behaviour: SimulatorBehaviour): Promise<void>;
}

/** The simulated ministries' control API (`/__control`), which only local and sandbox deployments run. */
export function createSimulatorControlClient(opts: { baseUrl: string; timeoutMs: number; fetch?: typeof fetch }): SimulatorControl {
  const doFetch = opts.fetch ?? fetch;
  const post = async (path: string, body: unknown) => {
    const res = await doFetch(new URL(path, opts.baseUrl).toString(), {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(opts.timeoutMs),
    });
    const text = await res.text().catch(() => '');
    return { status: res.status, ok: res.ok, text };
  };
  return {
    async approve(invoice) {
      const res = await post('/__control/approve', { refNum: invoice.refNum, source: invoice.source });
      if (res.status === 404) return 'unknown';
      if (!res.ok) throw new Error(`simulator approve answered ${res.status}: ${res.text.slice(0, 200)}`);
      return 'approved';
    },
    async plant(invoices) {
      const res = await post('/__control/invoices', { invoices });
      if (!res.ok) throw new Error(`simulator plant answered ${res.status}: ${res.text.slice(0, 200)}`);
    },
    async behave(invoice, behaviour) {
      const res = await post('/__control/invoices/behaviour', { refNum: invoice.refNum, source: invoice.source, ...behaviour });
      if (!res.ok) throw new Error(`simulator behaviour answered ${res.status}: ${res.text.slice(0, 200)}`);
    },
  };
}
