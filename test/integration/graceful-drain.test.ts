import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { createTestContext, type TestContext } from '../helpers/test-context.js';
import { invoiceFixture } from '../helpers/fixtures.js';
import { lookupRef } from '../helpers/api.js';
import { isRefused, probe } from '../helpers/http-probe.js';
import { buildListeners, type Listener } from '../../src/composition/listeners.factory.js';
import { createDrainState, createProcessShutdown } from '../../src/composition/shutdown.factory.js';

const HELD = invoiceFixture('mof', 'DRAIN-HELD');

/** The API process's listeners and signal handling, on the context's dependencies, listening on free ports. */
async function startServing(ctx: TestContext, drainMs: number) {
  const drain = createDrainState();
  const listeners: Listener[] = await buildListeners(ctx.config, ctx.deps, ctx.deps.logger, { drain });
  for (const l of listeners) await l.app.listen({ port: 0, host: '127.0.0.1' });
  const [api] = listeners.map((l) => `http://127.0.0.1:${(l.app.server.address() as AddressInfo).port}`);
  let closingBegan: () => void = () => undefined;
  const closing = new Promise<void>((resolve) => (closingBegan = resolve));
  let exited: (code: number) => void = () => undefined;
  const exit = new Promise<number>((resolve) => (exited = resolve));
  const signal = createProcessShutdown({
    drain,
    drainMs,
    closeDeadlineMs: 10_000,
    stopJobs: async () => undefined,
    closeListeners: async () => {
      closingBegan();
      await Promise.allSettled(listeners.map((l) => l.app.close()));
    },
    closeRest: async () => undefined,
    logger: ctx.deps.logger,
    exit: exited,
  });
  return { api: `${api}/api/v1`, signal, closing, exit, close: async () => {
      await Promise.allSettled(listeners.map((l) => l.app.close()));
    },
  };
}

describe('graceful drain', () => {
  it('answers readiness 503 while it still serves, then stops accepting and finishes the request in flight', async ({ onTestFinished }) => {
    const ctx = await createTestContext({ fixtures: { invoices: [HELD] } });
    onTestFinished(() => ctx.close());
    const serving = await startServing(ctx, 300);
    onTestFinished(serving.close);
    const partner = await ctx.partner();
    const invoiceId = (await lookupRef(ctx, partner.apiKey, HELD.refNum)).id;
    expect(await probe(`${serving.api}/health/ready`)).toMatchObject({ status: 200 });

    // A payment whose ministry submit is held: in flight across the signal, the drain and the close.
    expect((await ctx.sim('/__control/submits/hold', { source: 'mof', refNum: HELD.refNum })).statusCode).toBe(200);
    const inFlight = fetch(`${serving.api}/payments`, {
      method: 'POST',
      headers: { 'x-api-key': partner.apiKey, 'content-type': 'application/json', 'x-idempotency-key': 'drain-held' },
      body: JSON.stringify({ invoiceId }),
    });
    await expect.poll(async () => (await ctx.simulator.inject({ method: 'GET', url: '/__control/submits' })).json<{ held: unknown[] }>().held.length, { timeout: 10_000 }).toBe(1);

    serving.signal('SIGTERM');
    // Draining: not ready, still alive, still serving, and each answer closes its connection.
    expect(await probe(`${serving.api}/health/ready`)).toMatchObject({ status: 503, connection: 'close' });
    const ready = await fetch(`${serving.api}/health/ready`);
    expect(ready.status).toBe(503);
    expect(await ready.json()).toMatchObject({ status: 'draining', db: 'ok', code: 'service_unavailable' });
    expect(await probe(`${serving.api}/health/live`)).toMatchObject({ status: 200, connection: 'close' });
    const read = await fetch(`${serving.api}/invoices/ref/${HELD.refNum}`, { headers: { 'x-api-key': partner.apiKey } });
    expect(read.status).toBe(200);

    // Past the wait the listener refuses new connections, while the held request is still open.
    await serving.closing;
    await expect.poll(async () => isRefused(await probe(`${serving.api}/health/live`)), { timeout: 10_000 }).toBe(true);
    expect((await ctx.sim('/__control/submits/release', { source: 'mof', refNum: HELD.refNum })).statusCode).toBe(200);
    const answered = await inFlight;
    expect(answered.status).toBe(201);
    expect(await answered.json()).toMatchObject({ invoiceId, status: expect.stringMatching(/^(pending|submitted)$/) });
    expect(await serving.exit).toBe(0);
  });

  it('ends the drain wait at a second signal', async ({ onTestFinished }) => {
    const ctx = await createTestContext();
    onTestFinished(() => ctx.close());
    // A wait far longer than the test may take: only the second signal can end it.
    const serving = await startServing(ctx, 3_600_000);
    onTestFinished(serving.close);
    serving.signal('SIGTERM');
    expect(await probe(`${serving.api}/health/ready`)).toMatchObject({ status: 503 });
    serving.signal('SIGTERM');
    expect(await serving.exit).toBe(0);
    expect(isRefused(await probe(`${serving.api}/health/live`))).toBe(true);
  });
});

describe('the shutdown sequence', () => {
  const silent = { info: () => undefined, warn: () => undefined, error: () => undefined };

  it('runs every close step when one fails, and exits 1', async () => {
    const ran: string[] = [];
    const exit = await new Promise<number>((resolve) => {
      const signal = createProcessShutdown({
        drain: createDrainState(),
        drainMs: 0,
        closeDeadlineMs: 10_000,
        stopJobs: async () => {
          ran.push('jobs');
        },
        closeListeners: async () => {
          ran.push('listeners');
          throw new Error('listener close failed');
        },
        closeRest: async () => {
          ran.push('rest');
        },
        logger: silent,
        exit: resolve,
      });
      signal('SIGTERM');
    });
    expect(exit).toBe(1);
    expect(ran).toEqual(['jobs', 'listeners', 'rest']);
  });

  it('exits 1 at once at a signal once the listeners are closing', async () => {
    const drain = createDrainState();
    let release: () => void = () => undefined;
    const exits: number[] = [];
    let closing: () => void = () => undefined;
    const closingBegan = new Promise<void>((resolve) => (closing = resolve));
    const signal = createProcessShutdown({
      drain,
      drainMs: 0,
      closeDeadlineMs: 10_000,
      stopJobs: async () => undefined,
      // A request in flight that never ends.
      closeListeners: () => {
        closing();
        return new Promise<void>((resolve) => (release = resolve));
      },
      closeRest: async () => undefined,
      logger: silent,
      exit: (code) => exits.push(code),
    });
    signal('SIGTERM');
    await closingBegan;
    expect(drain.isDraining()).toBe(true);
    expect(exits).toEqual([]);
    signal('SIGTERM');
    expect(exits).toEqual([1]);
    release();
  });
});
