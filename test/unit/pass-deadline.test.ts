import { describe, expect, it, vi } from 'vitest';
import { startJobs, type Job } from '../../src/work/job-runner.js';
import { createWorkHealth } from '../../src/work/work-health.monitor.js';
import { createSerialPass } from '../../src/work/serial-pass.js';
import { createLeasePolicy, LEASE_MARGIN_MS } from '../../src/domain/lease-policy.js';

function recordingLog() {
  const lines: { level: string; msg: string; obj: object }[] = [];
  const at = (level: string) => (obj: object, msg?: string) => void lines.push({ level, msg: msg ?? '', obj });
  return { log: { info: at('info'), warn: at('warn'), error: at('error') }, lines };
}

const never = () => new Promise<void>(() => undefined);

describe('a background pass past its deadline', () => {
  it('is abandoned once, counted, and the next tick starts a new pass', async () => {
    const { log, lines } = recordingLog();
    const abandoned: string[] = [];
    const health = createWorkHealth({ log, onAbandoned: (work) => abandoned.push(work) });
    let passes = 0;
    let abandons = 0;
    const job: Job = {
      name: 'hangs-once',
      intervalMs: 5,
      deadlineMs: 40,
      run: () => (++passes === 1 ? never() : Promise.resolve()),
      abandon: () => void abandons++,
    };
    const running = startJobs([job], log, { health });
    try {
      await expect.poll(() => passes).toBeGreaterThanOrEqual(3);
      // Read while the loop runs: a stopped loop (or one a busy machine keeps from its next tick a few intervals) reads as stalled.
      await expect.poll(() => health.stalled()).toEqual([]);
    } finally {
      await running.stop();
    }
    expect(abandoned).toEqual(['hangs-once']);
    expect(abandons).toBe(1);
    expect(lines.filter((l) => l.msg.startsWith('background pass abandoned'))).toHaveLength(1);
  });

  it('counts its deadline from its last progress, so a long pass that renews is left alone', async () => {
    // The runner's ticks, its watchdog and the pass's renewals all run on the test's clock.
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'Date'] });
    const { log } = recordingLog();
    const abandoned: string[] = [];
    const health = createWorkHealth({ log, onAbandoned: (work) => abandoned.push(work) });
    let progressAt = Date.now();
    let finish: () => void = () => undefined;
    let passes = 0;
    const deadlineMs = 60;
    const job: Job = {
      name: 'long',
      intervalMs: 5,
      deadlineMs,
      progress: () => progressAt,
      run: () => {
        passes++;
        return new Promise<void>((resolve) => (finish = resolve));
      },
    };
    const beat = setInterval(() => (progressAt = Date.now()), 10);
    const running = startJobs([job], log, { health });
    try {
      // Five deadlines long, renewed every sixth of one.
      await vi.advanceTimersByTimeAsync(5 * deadlineMs);
      expect(abandoned).toEqual([]);
      expect(passes).toBe(1);
      clearInterval(beat);
      await vi.advanceTimersByTimeAsync(deadlineMs + 10);
      expect(abandoned).toEqual(['long']);
    } finally {
      clearInterval(beat);
      finish();
      await running.stop();
      vi.useRealTimers();
    }
  });

  it('does not hold up shutdown once abandoned', async () => {
    const { log } = recordingLog();
    const abandoned: string[] = [];
    const health = createWorkHealth({ log, onAbandoned: (work) => abandoned.push(work) });
    const job: Job = { name: 'stuck', intervalMs: 5, deadlineMs: 20, run: never };
    const running = startJobs([job], log, { health });
    await expect.poll(() => abandoned.length).toBeGreaterThanOrEqual(1);
    await running.stop();
    expect(abandoned[0]).toBe('stuck');
  });
});

describe('work health', () => {
  it('lists a loop with no completed pass for three intervals as stalled, and clears it on the next completion', () => {
    const { log } = recordingLog();
    let now = 1000;
    const health = createWorkHealth({ log, now: () => now });
    health.watch('confirmations', 100);
    health.watch('sweep', 1000);
    now += 301;
    expect(health.stalled()).toEqual(['confirmations']);
    health.completed('confirmations');
    expect(health.stalled()).toEqual([]);
  });
});

describe('serial pass', () => {
  it('starts a new pass after the one in flight is abandoned, and the late one does not clear it', async () => {
    let release: () => void = () => undefined;
    let calls = 0;
    const passes = createSerialPass(() => {
      calls++;
      return calls === 1 ? new Promise<void>((resolve) => (release = resolve)) : Promise.resolve();
    });
    const first = passes.now();
    expect(passes.now()).toBe(first);
    passes.abandon();
    expect(passes.busy()).toBe(false);
    const second = passes.now();
    expect(second).not.toBe(first);
    await second;
    const third = new Promise<void>((resolve) => {
      void passes.now().then(resolve);
    });
    release();
    await first;
    await third;
    expect(calls).toBe(3);
  });
});

describe('lease policy', () => {
  const d = { queryMs: 10_000, ministryMs: 3000, webhookMs: 5000, pushMs: 5000, reconcileMs: 300_000 };
  const leases = createLeasePolicy(d);

  it('never leases work for less than the deadlines of what it waits on before its outside effect', () => {
    expect(leases.confirmation).toBeGreaterThanOrEqual(d.queryMs + 2 * d.ministryMs);
    expect(leases.statusCheck).toBeGreaterThanOrEqual(d.queryMs + d.ministryMs);
    expect(leases.partnerCancel).toBeGreaterThanOrEqual(d.queryMs + d.ministryMs);
    expect(leases.webhook).toBeGreaterThanOrEqual(d.queryMs + d.webhookMs);
    expect(leases.push).toBeGreaterThanOrEqual(d.queryMs + d.pushMs);
    expect(leases.idempotency).toBeGreaterThanOrEqual(2 * d.queryMs + 2 * d.ministryMs);
    expect(leases.reconciliation).toBeGreaterThanOrEqual(d.reconcileMs);
  });

  it('follows the deadlines it is given: a longer query deadline lengthens every lease and pass', () => {
    const slower = createLeasePolicy({ ...d, queryMs: 20_000 });
    for (const key of ['confirmation', 'statusCheck', 'partnerCancel', 'webhook', 'push', 'idempotency'] as const) expect(slower[key]).toBeGreaterThan(leases[key]);
    for (const [pass, ms] of Object.entries(leases.passes)) {
      if (pass !== 'reconciliation') expect(slower.passes[pass as keyof typeof leases.passes]).toBeGreaterThan(ms);
      expect(ms).toBeGreaterThanOrEqual(d.queryMs + LEASE_MARGIN_MS);
    }
  });

  it('keeps reconciliation long enough for one ministry call between renewals', () => {
    expect(createLeasePolicy({ ...d, reconcileMs: 1000 }).reconciliation).toBeGreaterThanOrEqual(d.queryMs + d.ministryMs);
  });
});
