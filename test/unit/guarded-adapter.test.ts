import { describe, expect, it } from 'vitest';
import { guardAdapters, type CircuitStateReport } from '../../src/adapters/ministry/guarded-adapter.js';
import { UpstreamError, type MinistryAdapter, type MinistryAdapters, type UpstreamPaymentState } from '../../src/domain/ministry.port.js';
import type { Source } from '../../src/domain/vocabulary.js';

interface Failing {
  status: boolean;
  submit?: boolean;
}

/** A ministry system whose status call (or submit) fails while `failing` says so; everything else answers. */
function adapter(source: Source, failing: Failing, calls: string[]): MinistryAdapter {
  return {
    source,
    search: async () => [],
    getByRef: async () => null,
    submitPayment: async () => {
      calls.push(`${source}:submit`);
      if (failing.submit) throw new UpstreamError(source, 'http', 'submit answered 500');
      return { accepted: true, linkedRefNums: [] };
    },
    getPayment: async (): Promise<UpstreamPaymentState> => {
      calls.push(`${source}:status`);
      if (failing.status) throw new UpstreamError(source, 'timeout', 'status timed out');
      return { status: 'submitted', confirmedAt: null };
    },
    cancelPayment: async () => 'canceled' as const,
    settlement: async () => [],
  };
}

function guarded(failing: Failing, calls: string[], clock: { ms: number }, onState?: CircuitStateReport): MinistryAdapters {
  const upstream = { mof: adapter('mof', failing, calls), etax: adapter('etax', failing, calls), police: adapter('police', failing, calls) };
  return guardAdapters(upstream, { failureThreshold: 2, openMs: 1000 }, () => clock.ms, onState);
}

const REF = { paymentId: 'p-1', refNum: 'R-1' };
const SUBMIT = { paymentId: 'p-2', refNum: 'R-2', amount: '100' };

async function kindOf(call: Promise<unknown>): Promise<string> {
  try {
    await call;
    return 'ok';
  } catch (err) {
    return err instanceof UpstreamError ? err.kind : 'other';
  }
}

describe('circuit breaker per ministry system and operation', () => {
  it('opens on failing status calls and still lets the same system take submissions', async () => {
    const calls: string[] = [];
    const clock = { ms: 0 };
    const ministries = guarded({ status: true }, calls, clock);
    expect(await kindOf(ministries.etax.getPayment(REF))).toBe('timeout');
    expect(await kindOf(ministries.etax.getPayment(REF))).toBe('timeout');
    expect(await kindOf(ministries.etax.getPayment(REF))).toBe('circuit-open');
    expect(calls.filter((c) => c === 'etax:status')).toHaveLength(2);

    expect(await ministries.etax.submitPayment(SUBMIT)).toEqual({ accepted: true, linkedRefNums: [] });
    expect(calls).toContain('etax:submit');
    // Another system's status call has its own record too.
    expect(await kindOf(ministries.mof.getPayment(REF))).toBe('timeout');
  });

  it('lets a trial status call through after the open period and closes on its success', async () => {
    const calls: string[] = [];
    const clock = { ms: 0 };
    const failing = { status: true };
    const ministries = guarded(failing, calls, clock);
    await kindOf(ministries.etax.getPayment(REF));
    await kindOf(ministries.etax.getPayment(REF));
    clock.ms = 500;
    expect(await kindOf(ministries.etax.getPayment(REF))).toBe('circuit-open');
    failing.status = false;
    clock.ms = 1000;
    expect(await kindOf(ministries.etax.getPayment(REF))).toBe('ok');
    expect(await kindOf(ministries.etax.getPayment(REF))).toBe('ok');
  });

  it('reports the system, operation and state of the circuit each call leaves (for the gauge)', async () => {
    const calls: string[] = [];
    const clock = { ms: 0 };
    const failing = { status: true };
    const reports: string[] = [];
    const ministries = guarded(failing, calls, clock, (source, operation, state) => reports.push(`${source} ${operation} ${state}`));
    await kindOf(ministries.etax.getPayment(REF));
    await kindOf(ministries.etax.getPayment(REF));
    await kindOf(ministries.etax.getPayment(REF));
    await ministries.etax.submitPayment(SUBMIT);
    failing.status = false;
    clock.ms = 1000;
    await kindOf(ministries.etax.getPayment(REF));
    expect(reports).toEqual([
      'etax getPayment closed',
      'etax getPayment open',
      'etax getPayment open',
      'etax submitPayment closed',
      'etax getPayment closed',
    ]);
  });

  it('opens on failing submissions without refusing the status calls of the same system', async () => {
    const calls: string[] = [];
    const ministries = guarded({ status: false, submit: true }, calls, { ms: 0 });
    expect(await kindOf(ministries.police.submitPayment(SUBMIT))).toBe('http');
    expect(await kindOf(ministries.police.submitPayment(SUBMIT))).toBe('http');
    expect(await kindOf(ministries.police.submitPayment(SUBMIT))).toBe('circuit-open');
    expect(await kindOf(ministries.police.getPayment(REF))).toBe('ok');
  });
});
