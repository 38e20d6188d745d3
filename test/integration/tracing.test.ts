import { rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { createTestContext, type TestContext } from '../helpers/test-context.js';
import { capturingLogger, type LogLine } from '../helpers/log-capture.js';
import { approve, lookupRef, payOk } from '../helpers/api.js';
import { invoiceFixture } from '../helpers/fixtures.js';
import { startReceiver, type WebhookReceiver } from '../helpers/webhook-receiver.js';
import { testConfig } from '../helpers/test-config.js';
import { seededDataDir } from '../helpers/database-image.js';
import { createDatabase, queryOnce } from '../helpers/pg-query.js';
import { createPartnerKey, serviceEnv, startApiProcess, type ApiProcess } from '../helpers/api-process.js';
import { buildSimulator } from '../../simulator/simulator.app.js';
import { listenLocal } from '../helpers/listen-local.js';
import { freePorts } from '../walkthrough/walkthrough.js';

/*
 * W3C trace context end to end: a partner's traceparent is the parent of our request, every
 * ministry call and webhook delivery carries the trace, and, with OTLP export on, one trace holds
 * the request, its database and ministry spans, the confirmation check and the webhook delivery.
 */

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;
const PARTNER_TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const PARTNER_SPAN = '00f067aa0ba902b7';
const partnerTraceparent = `00-${PARTNER_TRACE}-${PARTNER_SPAN}-01`;
const PAYER = { register: 'ТА99112233', name: 'Trace Payer Secretname' };

const traceIdOf = (header: unknown) => (typeof header === 'string' ? TRACEPARENT.exec(header)?.[1] : undefined);

interface TraceHeaderCall {
  route: string;
  traceparent: string | null;
}

async function ministryCalls(sim: FastifyInstance): Promise<TraceHeaderCall[]> {
  return (await sim.inject({ method: 'GET', url: '/__control/trace-headers' })).json<{ calls: TraceHeaderCall[] }>().calls;
}

describe('trace context without export (the default)', () => {
  let ctx: TestContext;
  let receiver: WebhookReceiver;
  let lines: LogLine[] = [];

  beforeAll(async () => {
    const capture = capturingLogger();
    lines = capture.lines;
    ctx = await createTestContext({ logger: capture.logger });
    receiver = await startReceiver();
    // Every test of this block looks the invoice up, whatever order they run in.
    expect((await ctx.sim('/__control/invoices', invoiceFixture('mof', 'TRACE-OFF-1', { amount: 1200, payer: PAYER }))).statusCode).toBe(200);
  });
  afterAll(async () => {
    await ctx?.close();
    await receiver?.close();
  });
  const logged = () => lines as (LogLine & Record<string, unknown>)[];

  it("makes the partner's traceparent the parent, passes it to the ministry and to the payment's webhook delivery", async () => {
    const { apiKey } = await ctx.partner();
    const hook = await ctx.api(apiKey, { method: 'POST', url: '/api/v1/webhooks', payload: { url: receiver.url, secret: 'trace-secret-0123456789', events: ['payment.confirmed'] } });
    expect(hook.statusCode).toBe(201);
    const invoice = await lookupRef(ctx, apiKey, 'TRACE-OFF-1');
    const payment = await payOk(ctx, apiKey, { invoiceId: invoice.id }, { traceparent: partnerTraceparent, tracestate: 'vendor=abc' });

    const submits = (await ministryCalls(ctx.simulator)).filter((c) => c.route === 'POST /mof/api/payments');
    expect(submits.length).toBeGreaterThan(0);
    for (const call of submits) {
      expect(traceIdOf(call.traceparent)).toBe(PARTNER_TRACE);
      expect(call.traceparent).not.toContain(PARTNER_SPAN);
    }

    expect((await approve(ctx, 'TRACE-OFF-1')).statusCode).toBe(200);
    const deliveryOf = () => receiver.received.find((r) => r.body.includes(payment.id));
    for (let pass = 0; pass < 20 && !deliveryOf(); pass++) {
      ctx.advance(60_000);
      await ctx.runJobs();
    }
    const delivery = deliveryOf();
    expect(delivery?.headers.traceparent).toMatch(TRACEPARENT);
    expect(traceIdOf(delivery?.headers.traceparent)).toBe(PARTNER_TRACE);
    expect(delivery?.headers.tracestate).toBe('vendor=abc');

    // The status check the job made for the payment is in the same trace.
    const checks = (await ministryCalls(ctx.simulator)).filter((c) => c.route.startsWith('GET /mof/api/payments/'));
    expect(checks.length).toBeGreaterThan(0);
    expect(checks.every((c) => traceIdOf(c.traceparent) === PARTNER_TRACE)).toBe(true);
  });

  it('gives a test ping, which is about no payment, a fresh trace', async () => {
    const { apiKey } = await ctx.partner();
    const hook = await ctx.api(apiKey, { method: 'POST', url: '/api/v1/webhooks', payload: { url: receiver.url, secret: 'trace-secret-0123456789', events: ['payment.confirmed'] } });
    const ping = await ctx.api(apiKey, { method: 'POST', url: `/api/v1/webhooks/${hook.json<{ id: string }>().id}/test`, headers: { traceparent: partnerTraceparent } });
    expect(ping.statusCode).toBeLessThan(300);
    const { deliveryId } = ping.json<{ deliveryId: string }>();
    const delivered = () => receiver.received.find((r) => r.headers['webhook-id'] === deliveryId || r.body.includes(deliveryId));
    for (let pass = 0; pass < 20 && !delivered(); pass++) await ctx.runJobs();
    expect(delivered()?.headers.traceparent).toMatch(TRACEPARENT);
    expect(traceIdOf(delivered()?.headers.traceparent)).not.toBe(PARTNER_TRACE);
  });

  it.each([
    ['version 01', `01-${PARTNER_TRACE}-${PARTNER_SPAN}-01`],
    ['uppercase hex', `00-${PARTNER_TRACE.toUpperCase()}-${PARTNER_SPAN}-01`],
    ['an all-zero trace id', `00-${'0'.repeat(32)}-${PARTNER_SPAN}-01`],
    ['an all-zero span id', `00-${PARTNER_TRACE}-${'0'.repeat(16)}-01`],
    ['a trailing field', `00-${PARTNER_TRACE}-${PARTNER_SPAN}-01-extra`],
  ])('starts a new trace for a traceparent with %s', async (_case, header) => {
    const { apiKey } = await ctx.partner();
    const before = (await ministryCalls(ctx.simulator)).length;
    const res = await ctx.api(apiKey, { method: 'GET', url: '/api/v1/invoices/ref/TRACE-OFF-1', headers: { traceparent: header } });
    expect(res.statusCode).toBe(200);
    const calls = (await ministryCalls(ctx.simulator)).slice(before);
    expect(calls.length).toBeGreaterThan(0);
    for (const call of calls) {
      expect(call.traceparent).toMatch(TRACEPARENT);
      expect(traceIdOf(call.traceparent)).not.toBe(PARTNER_TRACE);
      expect(traceIdOf(call.traceparent)).not.toBe('0'.repeat(32));
    }
  });

  it("names the request's trace and span on its log lines", async () => {
    const { apiKey } = await ctx.partner();
    const res = await ctx.api(apiKey, { method: 'GET', url: '/api/v1/invoices/ref/TRACE-OFF-1', headers: { traceparent: partnerTraceparent, 'x-request-id': 'trace-log-1' } });
    expect(res.statusCode).toBe(200);
    const mine = logged().filter((l) => l.reqId === 'trace-log-1');
    expect(mine.length).toBeGreaterThan(0);
    for (const line of mine) {
      expect(line.traceId).toBe(PARTNER_TRACE);
      expect(line.spanId).toMatch(/^[0-9a-f]{16}$/);
      expect(line.spanId).not.toBe(PARTNER_SPAN);
    }
  });
});

interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes?: { key: string; value: Record<string, unknown> }[];
  links?: { traceId: string; spanId: string }[];
}

/** An OTLP/HTTP JSON receiver: every span POSTed to /v1/traces. */
async function startCollector(): Promise<{ url: string; spans: OtlpSpan[]; server: Server }> {
  const spans: OtlpSpan[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.method === 'POST' && req.url === '/v1/traces') {
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { resourceSpans?: { scopeSpans?: { spans?: OtlpSpan[] }[] }[] };
        for (const rs of body.resourceSpans ?? []) for (const ss of rs.scopeSpans ?? []) spans.push(...(ss.spans ?? []));
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, spans, server };
}

const attr = (span: OtlpSpan, key: string) => {
  const value = span.attributes?.find((a) => a.key === key)?.value;
  return value ? Object.values(value)[0] : undefined;
};

describe('OTLP export', () => {
  const { databaseUrl } = testConfig();
  const ADMIN_TOKEN = 'trace-admin-token';
  const dbName = `trace_${Date.now()}_${process.pid}`;
  let collector: Awaited<ReturnType<typeof startCollector>>;
  let simulator: FastifyInstance;
  let receiver: WebhookReceiver;
  let service: ApiProcess | undefined;
  let port = 0;
  let adminPort = 0;
  let dataDir = '';

  beforeAll(async () => {
    collector = await startCollector();
    receiver = await startReceiver();
    simulator = await buildSimulator({ fixtures: { invoices: [invoiceFixture('mof', 'TRACE-ON-1', { amount: 1500, payer: PAYER })] }, autoApproveMs: 0 });
    const simulatorUrl = await listenLocal(simulator);
    const dbUrl = databaseUrl ? await createDatabase(databaseUrl, dbName) : '';
    [port = 0, adminPort = 0] = await freePorts(2);
    // On PGlite, a data directory that already holds a migrated cluster: the service skips initdb.
    dataDir = databaseUrl ? 'memory://' : await seededDataDir('gpc-trace-');
    const env = serviceEnv(
      { databaseUrl: dbUrl, port, adminPort, adminToken: ADMIN_TOKEN, ministryUrl: simulatorUrl },
      { DATA_DIR: dataDir, OTEL_EXPORTER_OTLP_ENDPOINT: collector.url, OTEL_TRACES_SAMPLER: 'parentbased_always_on', OTEL_BSP_SCHEDULE_DELAY: '100', OTEL_SERVICE_NAME: 'trace-test' },
    );
    service = await startApiProcess('tracing-export', env, `http://127.0.0.1:${port}/api/v1/health/ready`);
  }, 60_000);

  afterAll(async () => {
    await service?.stop();
    await simulator?.close();
    await receiver?.close();
    await new Promise((resolve) => collector?.server.close(resolve));
    if (databaseUrl) await queryOnce(databaseUrl, `DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`);
    else if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  it("exports one trace, the partner's, from the request to the webhook delivery, with nothing personal in it", async () => {
    const apiKey = await createPartnerKey(adminPort, ADMIN_TOKEN, 'Trace Bank');
    const api = (method: string, path: string, body?: unknown) =>
      fetch(`http://127.0.0.1:${port}/api/v1${path}`, {
        method,
        headers: { 'x-api-key': apiKey, traceparent: partnerTraceparent, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
    expect((await api('POST', '/webhooks', { url: receiver.url, secret: 'trace-secret-0123456789', events: ['payment.confirmed'] })).status).toBe(201);
    const invoice = (await (await api('GET', '/invoices/ref/TRACE-ON-1')).json()) as { id: string };
    const paid = await api('POST', '/payments', { invoiceId: invoice.id });
    expect(paid.status).toBe(201);
    const { id: paymentId } = (await paid.json()) as { id: string };
    expect((await simulator.inject({ method: 'POST', url: '/__control/approve', payload: { refNum: 'TRACE-ON-1' } })).statusCode).toBe(200);

    await expect.poll(() => receiver.received.length, { timeout: 20_000 }).toBeGreaterThan(0);
    expect(traceIdOf(receiver.received[0]?.headers.traceparent)).toBe(PARTNER_TRACE);

    const inTrace = () => collector.spans.filter((s) => s.traceId === PARTNER_TRACE);
    await expect.poll(() => inTrace().some((s) => s.name === 'webhook delivery'), { timeout: 20_000 }).toBe(true);
    const spans = inTrace();
    const request = spans.find((s) => s.name === 'POST /api/v1/payments');
    expect(request?.parentSpanId).toBe(PARTNER_SPAN);
    expect(attr(request as OtlpSpan, 'http.route')).toBe('/api/v1/payments');
    expect(attr(request as OtlpSpan, 'payment.id')).toBe(paymentId);
    expect(typeof attr(request as OtlpSpan, 'partner.id')).toBe('string');
    expect(spans.some((s) => s.name === 'GET /api/v1/invoices/ref/:refNum')).toBe(true);

    const byId = new Map(spans.map((s) => [s.spanId, s]));
    const under = (span: OtlpSpan | undefined, ancestor: OtlpSpan | undefined): boolean => {
      for (let at = span; at; at = at.parentSpanId ? byId.get(at.parentSpanId) : undefined) if (at.parentSpanId === ancestor?.spanId) return true;
      return false;
    };
    const submit = spans.find((s) => attr(s, 'ministry.operation') === 'submitPayment');
    expect(attr(submit as OtlpSpan, 'ministry.system')).toBe('mof');
    expect(under(submit, request)).toBe(true);
    const database = spans.filter((s) => attr(s, 'db.system.name') === 'postgresql' || attr(s, 'db.system') === 'postgresql');
    expect(database.some((s) => under(s, request))).toBe(true);

    const check = spans.find((s) => s.name === 'payment confirmation check');
    expect(check?.parentSpanId).toBe(request?.spanId);
    expect(attr(check as OtlpSpan, 'payment.id')).toBe(paymentId);
    expect(spans.some((s) => attr(s, 'ministry.operation') === 'getPayment' && under(s, check))).toBe(true);
    const delivery = spans.find((s) => s.name === 'webhook delivery');
    expect(delivery?.parentSpanId).toBe(request?.spanId);
    expect(traceIdOf(receiver.received[0]?.headers.traceparent)).toBe(delivery?.traceId);

    // Nothing exported names the payer, the API key, the webhook secret, or a path with its ids.
    const exported = JSON.stringify(collector.spans);
    for (const secret of [PAYER.name, PAYER.register, apiKey, 'trace-secret-0123456789', `/payments/${paymentId}`, 'TRACE-ON-1']) {
      expect(exported).not.toContain(secret);
    }
  }, 90_000);
});
