import type { Source } from '../domain/vocabulary.js';

/** What the simulator said to an approve: `unknown` when it holds no submitted payment for the invoice. */
export type SimulatorApproval = 'approved' | 'unknown';

export interface SimulatorControl {
  /** Throws when the simulator cannot be reached or answers an error. */
  approve(invoice: { refNum: string; source: Source }): Promise<SimulatorApproval>;
}

/** The simulated ministries' control API (`/__control`), which only local and sandbox deployments run. */
export function createSimulatorControlClient(opts: { baseUrl: string; timeoutMs: number; fetch?: typeof fetch }): SimulatorControl {
  const doFetch = opts.fetch ?? fetch;
  const approveUrl = new URL('/__control/approve', opts.baseUrl).toString();
  return {
    async approve(invoice) {
      const res = await doFetch(approveUrl, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ refNum: invoice.refNum, source: invoice.source }),
        signal: AbortSignal.timeout(opts.timeoutMs),
      });
      const text = await res.text().catch(() => '');
      if (res.status === 404) return 'unknown';
      if (!res.ok) throw new Error(`simulator approve answered ${res.status}: ${text.slice(0, 200)}`);
      return 'approved';
    },
  };
}
