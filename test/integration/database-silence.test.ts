import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestContext, type TestContext } from '../helpers/test-context.js';
import { capturingLogger } from '../helpers/log-capture.js';
import { testConfig } from '../helpers/test-config.js';
import { startDatabaseProxy, type TcpProxy } from '../helpers/tcp-proxy.js';
import { getPayment, partnerWithPayment } from '../helpers/api.js';

/*
 * A failover that never closes the old primary's sockets: the proxy in front of the shared server
 * stops forwarding on every open connection, for good, and holds new ones until it is restored.
 * Nothing errors; only the deadlines can tell the service that its database is gone.
 */
const { databaseUrl } = testConfig();
const QUERY_TIMEOUT_MS = 1000;
const READY_TIMEOUT_MS = 300;

async function timed<T>(fn: () => Promise<T>): Promise<{ value: T; ms: number }> {
  const started = performance.now();
  const value = await fn();
  return { value, ms: performance.now() - started };
}

describe.skipIf(!databaseUrl)('a silent database', { tags: ['postgres'] }, () => {
  let proxy: TcpProxy;
  let ctx: TestContext;
  const { logger, lines } = capturingLogger();

  beforeAll(async () => {
    const started = await startDatabaseProxy(databaseUrl as string);
    proxy = started.proxy;
    const viaProxy = started.url;
    ctx = await createTestContext({
      logger,
      config: { databaseUrl: viaProxy, dbQueryTimeoutMs: QUERY_TIMEOUT_MS, dbConnectTimeoutMs: QUERY_TIMEOUT_MS, readyDbTimeoutMs: READY_TIMEOUT_MS },
    });
  });

  afterAll(async () => {
    proxy?.restore();
    await ctx?.close();
    await proxy?.close();
  });

  it('answers within the deadlines while it is silent, refuses at once once it knows, and never reuses a silenced connection', async () => {
    const { partner, payment } = await partnerWithPayment(ctx, 'mof');
    // Fill the pool with connections that will be silenced.
    await Promise.all(Array.from({ length: 10 }, () => getPayment(ctx, partner.apiKey, payment.id)));

    proxy.silence();

    const first = await timed(() => getPayment(ctx, partner.apiKey, payment.id));
    expect(first.value.statusCode, first.value.body).toBe(503);
    expect(first.value.headers['retry-after']).toBe('5');
    expect(first.ms).toBeLessThan(QUERY_TIMEOUT_MS + 1000);
    expect(first.ms).toBeGreaterThanOrEqual(QUERY_TIMEOUT_MS - 50);

    // The process now knows: no request waits out another deadline while a probe looks.
    for (let i = 0; i < 5; i++) {
      const next = await timed(() => getPayment(ctx, partner.apiKey, payment.id));
      expect(next.value.statusCode).toBe(503);
      expect(next.ms).toBeLessThan(QUERY_TIMEOUT_MS / 2);
    }

    const ready = await timed(() => ctx.app.inject({ method: 'GET', url: '/api/v1/health/ready' }));
    expect(ready.value.statusCode).toBe(503);
    expect(ready.value.json()).toMatchObject({ status: 'unavailable', db: 'down' });
    expect(ready.ms).toBeLessThan(READY_TIMEOUT_MS + 500);
    expect((await ctx.admin.inject({ method: 'GET', url: '/metrics' })).body).toMatch(/^database_up 0$/m);

    proxy.restore();
    await expect.poll(async () => (await ctx.app.inject({ method: 'GET', url: '/api/v1/health/ready' })).statusCode, { timeout: 10_000 }).toBe(200);
    // Every silenced connection was destroyed: were one handed out again, its request would wait out the deadline and fail.
    for (let i = 0; i < 25; i++) {
      const again = await getPayment(ctx, partner.apiKey, payment.id);
      expect(again.statusCode, again.body).toBe(200);
    }
    const outageLines = lines.filter((l) => l.msg.startsWith('database unavailable: background work paused'));
    expect(outageLines).toHaveLength(1);
    expect(lines.filter((l) => l.level >= 50).map((l) => l.msg)).toEqual([]);
  });
});
