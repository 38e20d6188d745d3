import { describe, expect, it } from 'vitest';
import { createSandboxService, type SandboxServiceDeps } from '../../src/services/sandbox.service.js';
import { createSimulatorControlClient } from '../../src/adapters/simulator-control.client.js';
import { ConflictError, NotFoundError, UpstreamUnavailableError } from '../../src/domain/errors.js';
import { systemClock } from '../../src/domain/clock.port.js';

const PAYMENT_ID = '11111111-1111-4111-8111-111111111111';
const INVOICE_ID = '22222222-2222-4222-8222-222222222222';

type Payment = Awaited<ReturnType<SandboxServiceDeps['payments']['findForPartner']>>;
type Invoice = Awaited<ReturnType<SandboxServiceDeps['invoices']['findById']>>;

/** What approving never calls (the scenario planting's dependencies). */
const unused = async (): Promise<never> => {
  throw new Error('not called by approve');
};

function service(opts: { status?: string; fetch: typeof fetch; payment?: boolean }) {
  const calls: { url: string; body: unknown }[] = [];
  const reopened: string[] = [];
  const fetchSpy: typeof fetch = async (input, init) => {
    calls.push({ url: String(input), body: JSON.parse(String(init?.body)) });
    return opts.fetch(input, init);
  };
  const svc = createSandboxService({
    payments: {
      findForPartner: async (partnerId, id) =>
        opts.payment === false || partnerId !== 'p1' ? null : ({ id, status: opts.status ?? 'submitted', invoice_id: INVOICE_ID } as unknown as Payment),
      reopenStatusCheck: async (id) => {
        reopened.push(id);
      },
    },
    invoices: {
      findById: async (id) => ({ id, source: 'etax', ref_num: 'ET-9' }) as unknown as Invoice,
      upsert: unused,
      recordAccess: unused,
      markPlanted: unused,
    },
    simulator: createSimulatorControlClient({ baseUrl: 'http://127.0.0.1:3100/', timeoutMs: 3000, fetch: fetchSpy }),
    ministry: { getByRef: unused },
    transaction: unused,
    now: systemClock,
  });
  return { svc, calls, reopened };
}

const answer = (status: number, body: unknown = {}) => async () => new Response(JSON.stringify(body), { status });

describe('sandbox service', () => {
  it("posts the invoice's ref and source to the simulator's control API", async () => {
    const { svc, calls, reopened } = service({ fetch: answer(200, { approved: {} }) });
    await expect(svc.approve('p1', PAYMENT_ID)).resolves.toEqual({ id: PAYMENT_ID, approved: true });
    expect(calls).toEqual([{ url: 'http://127.0.0.1:3100/__control/approve', body: { refNum: 'ET-9', source: 'etax' } }]);
    // The partner's next read asks the ministry even within the live interval.
    expect(reopened).toEqual([PAYMENT_ID]);
  });

  it('refuses unknown, foreign and non-submitted payments without calling the simulator', async () => {
    const foreign = service({ fetch: answer(200) });
    await expect(foreign.svc.approve('p2', PAYMENT_ID)).rejects.toBeInstanceOf(NotFoundError);
    const confirmed = service({ status: 'confirmed', fetch: answer(200) });
    await expect(confirmed.svc.approve('p1', PAYMENT_ID)).rejects.toBeInstanceOf(ConflictError);
    expect([...foreign.calls, ...confirmed.calls]).toEqual([]);
  });

  it('maps simulator answers: 404 to a conflict, anything else to a generic 503', async () => {
    await expect(service({ fetch: answer(404) }).svc.approve('p1', PAYMENT_ID)).rejects.toBeInstanceOf(ConflictError);
    const failed = service({ fetch: answer(500, { error: 'boom' }) }).svc.approve('p1', PAYMENT_ID);
    await expect(failed).rejects.toBeInstanceOf(UpstreamUnavailableError);
    await expect(failed).rejects.not.toHaveProperty('message', expect.stringContaining('boom'));
    const down = service({ fetch: async () => { throw new TypeError('fetch failed'); } }).svc.approve('p1', PAYMENT_ID);
    await expect(down).rejects.toBeInstanceOf(UpstreamUnavailableError);
  });
});
