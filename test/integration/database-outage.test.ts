import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestContext, type TestContext } from '../helpers/test-context.js';
import { capturingLogger } from '../helpers/log-capture.js';
import { testConfig } from '../helpers/test-config.js';
import { startDatabaseProxy, type TcpProxy } from '../helpers/tcp-proxy.js';
import { getPayment, partnerWithInvoice, partnerWithPayment, pay } from '../helpers/api.js';
import type { RunningJobs } from '../../src/jobs/job-runner.js';

/*
 * The service's PostgreSQL connections run through a proxy this suite cuts: to the service that
 * is a database restart (every connection reset, new ones refused), while the shared server the
 * other suites use goes on.
 */
const { databaseUrl } = testConfig();

describe.skipIf(!databaseUrl)('database outage', { tags: ['postgres'] }, () => {
  let proxy: TcpProxy;
  let ctx: TestContext;
  let jobs: RunningJobs | undefined;
  const { logger, lines } = capturingLogger();
  const said = (msg: string) => lines.filter((l) => l.msg === msg).length;

  beforeAll(async () => {
    const started = await startDatabaseProxy(databaseUrl as string);
    proxy = started.proxy;
    const viaProxy = started.url;
    ctx = await createTestContext({ logger, config: { databaseUrl: viaProxy, dbConnectTimeoutMs: 1000, confirmPollMs: 100, webhookPollMs: 50 } });
  });

  afterAll(async () => {
    await jobs?.stop();
    proxy.restore();
    await ctx?.close();
    await proxy?.close();
  });

  it('answers 503 with Retry-After while the database is away, pauses background work quietly, and serves again once it is back', async () => {
    const { partner, payment } = await partnerWithPayment(ctx, 'mof');
    const second = await partnerWithInvoice(ctx, 'etax');
    jobs = ctx.deps.startJobs();

    proxy.cut();

    const read = await getPayment(ctx, partner.apiKey, payment.id);
    expect(read.statusCode, read.body).toBe(503);
    expect(read.headers['retry-after']).toBe('5');
    expect(read.json()).toEqual({ statusCode: 503, error: 'Service Unavailable', message: 'Service temporarily unavailable; retry later' });
    const cut = await pay(ctx, second.partner.apiKey, { invoiceId: second.invoice.id }, { 'x-idempotency-key': 'outage-1' });
    expect(cut.statusCode, cut.body).toBe(503);

    const ready = await ctx.app.inject({ method: 'GET', url: '/api/v1/health/ready' });
    expect(ready.statusCode).toBe(503);
    expect(ready.json()).toMatchObject({ status: 'unavailable', db: 'down' });
    expect((await ctx.app.inject({ method: 'GET', url: '/api/v1/health/live' })).statusCode).toBe(200);
    const metrics = await ctx.admin.inject({ method: 'GET', url: '/metrics' });
    expect(metrics.statusCode).toBe(200);

    await expect.poll(() => said('database unavailable: background work paused, requests that need it answer 503 until it is back')).toBe(1);
    expect(metrics.body).toMatch(/^database_up 0$/m);
    // The jobs tick every 50-100 ms: give them a few dozen passes to fail, were they not paused.
    await new Promise((r) => setTimeout(r, 1500));

    proxy.restore();
    await expect.poll(async () => (await ctx.app.inject({ method: 'GET', url: '/api/v1/health/ready' })).statusCode, { timeout: 10_000 }).toBe(200);
    const again = await getPayment(ctx, partner.apiKey, payment.id);
    expect(again.statusCode, again.body).toBe(200);
    // The payment refused with 503 left nothing behind: the same key now makes it.
    const paid = await pay(ctx, second.partner.apiKey, { invoiceId: second.invoice.id }, { 'x-idempotency-key': 'outage-1' });
    expect(paid.statusCode, paid.body).toBe(201);
    await expect.poll(() => said('database available again: background work resumed')).toBe(1);
    expect((await ctx.admin.inject({ method: 'GET', url: '/metrics' })).body).toMatch(/^database_up 1$/m);

    expect(said('database unavailable: background work paused, requests that need it answer 503 until it is back')).toBe(1);
    expect(lines.filter((l) => l.level >= 50).map((l) => l.msg)).toEqual([]);
  });
});
