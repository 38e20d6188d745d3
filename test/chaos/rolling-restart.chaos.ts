import { randomUUID } from 'node:crypto';
import pg from 'pg';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { serviceEnv, startApiProcess, type ApiProcess } from '../helpers/api-process.js';
import { buildSimulator } from '../../simulator/simulator.app.js';
import type { FixtureFile } from '../../simulator/fixtures.schema.js';
import { checkInvariants, type RunSql } from '../helpers/invariants.js';
import { startReceiver, type WebhookReceiver } from '../helpers/webhook-receiver.js';
import { startLoadBalancer, type LoadBalancer } from '../helpers/load-balancer.js';
import { isRefused, probe, statusOf, type ProbeResult } from '../helpers/http-probe.js';
import { invoiceFixture } from '../helpers/fixtures.js';
import { freePorts } from '../walkthrough/walkthrough.js';
import { listenLocal } from '../helpers/listen-local.js';

/**
 * A rolling restart under steady partner traffic: two instances on one PostgreSQL and one Redis,
 * behind a load balancer that routes only to instances whose readiness answers 200. Each instance
 * in turn gets SIGTERM, exits, starts again and is ready before the next goes. No partner request
 * may fail, no payment may be lost or doubled, no webhook lost; and each instance's readiness must
 * have answered 503 while it still accepted connections, before it refused them.
 */
const DATABASE_URL = process.env.DATABASE_URL;
const REDIS_URL = process.env.REDIS_URL;
const ADMIN_TOKEN = 'rolling-admin-token';
const PAYER = '9900997';
const INVOICES = 400;
const CLIENTS = 4;
/** Each client's pause between one payment's requests and the next: steady traffic, not a saturating one that slows the restarts it watches. */
const PAUSE_MS = 25;
/** The balancer's health check interval (a cloud balancer's is seconds); the drain wait covers a few of them. */
const CHECK_EVERY_MS = 500;
const DRAIN_MS = 2000;

interface Instance extends ApiProcess {
  name: string;
  port: number;
  adminPort: number;
}

interface Failure {
  what: string;
  answer: string;
}

interface Attempt {
  key: string;
  refNum: string;
  paymentId: string;
}

let dbName: string;
let dbUrl: string;
let simulator: FastifyInstance;
let simulatorUrl: string;
let receiver: WebhookReceiver;
let balancer: LoadBalancer;
const instances: Instance[] = [];
let starts = 0;

function fixtures(): FixtureFile {
  return {
    invoices: Array.from({ length: INVOICES }, (_, i) =>
      invoiceFixture((['mof', 'etax', 'police'] as const)[i % 3] ?? 'mof', `RR-${i}`, { amount: 3000 + i, payer: { register: PAYER, name: 'Rolling' } }),
    ),
  };
}

async function startInstance(name: string, port: number, adminPort: number): Promise<Instance> {
  const env = serviceEnv({ databaseUrl: dbUrl, port, adminPort, adminToken: ADMIN_TOKEN, ministryUrl: simulatorUrl }, { REDIS_URL: REDIS_URL ?? '', SHUTDOWN_DRAIN_MS: String(DRAIN_MS) });
  // A start under a busy machine's load may take long; the drill measures it rather than bounding it.
  const started = await startApiProcess(`rolling-${name}-${++starts}`, env, `http://127.0.0.1:${port}/api/v1/health/ready`, [], 90_000);
  return { name, port, adminPort, ...started };
}

async function withClient<T>(fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: dbUrl });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

async function rows<T>(text: string, params: unknown[] = []): Promise<T[]> {
  return withClient(async (c) => (await c.query(text, params)).rows as T[]);
}

/**
 * Watches one instance's readiness on new connections from its SIGTERM until it refuses them, and
 * gives back what each probe met, in order.
 */
function watchReadiness(instance: Instance): { stop(): Promise<ProbeResult[]> } {
  const seen: ProbeResult[] = [];
  let done = false;
  const loop = (async () => {
    while (!done) {
      const result = await probe(`http://127.0.0.1:${instance.port}/api/v1/health/ready`, 2000);
      seen.push(result);
      if (isRefused(result)) return;
      await new Promise((r) => setTimeout(r, 20));
    }
  })();
  return {
    async stop() {
      done = true;
      await loop;
      return seen;
    },
  };
}

/** The probes in a line, runs of one outcome counted: `200×3 503×41 ECONNREFUSED`. */
function summary(seen: ProbeResult[]): string {
  const labels = seen.map((r) => ('status' in r ? String(r.status) : r.error));
  const runs: string[] = [];
  for (let i = 0; i < labels.length; ) {
    let j = i;
    while (labels[j] === labels[i]) j++;
    runs.push(j - i > 1 ? `${labels[i]}×${j - i}` : String(labels[i]));
    i = j;
  }
  return runs.join(' ');
}

beforeAll(async () => {
  if (!DATABASE_URL || !REDIS_URL) return;
  dbName = `rolling_${Date.now()}`;
  const admin = new pg.Client({ connectionString: DATABASE_URL });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${dbName}`);
  await admin.end();
  const url = new URL(DATABASE_URL);
  url.pathname = `/${dbName}`;
  dbUrl = url.toString();

  simulator = await buildSimulator({ fixtures: fixtures(), autoApproveMs: 200 });
  simulatorUrl = await listenLocal(simulator);
  receiver = await startReceiver();
  const [a = 0, aAdmin = 0, b = 0, bAdmin = 0] = await freePorts(4);
  // One after the other: the first migrates, the second finds the schema in place.
  instances.push(await startInstance('1', a, aAdmin));
  instances.push(await startInstance('2', b, bAdmin));
  balancer = await startLoadBalancer(
    instances.map((i) => ({ name: i.name, port: i.port, readyPath: '/api/v1/health/ready' })),
    { checkEveryMs: CHECK_EVERY_MS },
  );
}, 200_000);

afterAll(async () => {
  if (!DATABASE_URL || !REDIS_URL) return;
  await balancer?.close();
  await Promise.all(instances.map((i) => i.stop()));
  await simulator?.close();
  await receiver?.close();
  const admin = new pg.Client({ connectionString: DATABASE_URL });
  await admin.connect();
  await admin.query(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`);
  await admin.end();
}, 60_000);

describe.skipIf(!DATABASE_URL || !REDIS_URL)('rolling restart (two instances behind a load balancer, PostgreSQL and Redis)', () => {
  it('drops no partner request, payment or webhook while each instance in turn drains, stops and comes back', async () => {
    await expect.poll(() => balancer.backends.every((b) => b.ready), { timeout: 10_000, interval: 50 }).toBe(true);
    const [first] = instances as [Instance, Instance];
    const created = await fetch(`http://127.0.0.1:${first.adminPort}/admin/partners`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'Rolling Bank' }),
    });
    expect(created.status).toBe(201);
    const partner = (await created.json()) as { id: string; apiKey: string };

    let sent = 0;
    const failures: Failure[] = [];
    /** A partner request through the balancer; anything but a 2xx is a failure, as is a connection error. */
    async function call(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Record<string, unknown> | null> {
      sent++;
      const what = `${method} ${path}`;
      try {
        const res = await fetch(`${balancer.url}/api/v1${path}`, {
          method,
          headers: { 'x-api-key': partner.apiKey, ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
          body: body === undefined ? undefined : JSON.stringify(body),
          signal: AbortSignal.timeout(15_000),
        });
        const text = await res.text();
        if (res.status >= 200 && res.status < 300) return text ? (JSON.parse(text) as Record<string, unknown>) : {};
        failures.push({ what, answer: `${res.status} via ${res.headers.get('x-backend') ?? res.headers.get('x-load-balancer')}: ${text.slice(0, 200)}` });
      } catch (err) {
        failures.push({ what, answer: String((err as Error).cause ?? err) });
      }
      return null;
    }

    const hook = await call('POST', '/webhooks', { url: receiver.url, secret: 'rolling-secret-0123456789', events: ['payment.submitted', 'payment.confirmed'] });
    expect(hook, JSON.stringify(failures)).not.toBeNull();

    // Each client looks an invoice up, pays it with a key of its own, and reads the payment's status, until told to stop.
    const attempts: Attempt[] = [];
    let nextInvoice = 0;
    let stopTraffic = false;
    const clients = Array.from({ length: CLIENTS }, async () => {
      while (!stopTraffic) {
        const n = nextInvoice++;
        if (n >= INVOICES) {
          // Out of invoices: reads only, so the traffic stays steady to the end.
          const seen = attempts[n % Math.max(attempts.length, 1)];
          if (seen) await call('GET', `/payments/${seen.paymentId}`);
          await new Promise((r) => setTimeout(r, PAUSE_MS));
          continue;
        }
        const refNum = `RR-${n}`;
        const invoice = await call('GET', `/invoices/ref/${refNum}`);
        if (!invoice) continue;
        const key = randomUUID();
        const payment = await call('POST', '/payments', { invoiceId: invoice.id }, { 'x-idempotency-key': key });
        if (!payment) continue;
        attempts.push({ key, refNum, paymentId: payment.id as string });
        await call('GET', `/payments/${payment.id as string}`);
        await new Promise((r) => setTimeout(r, PAUSE_MS));
      }
    });

    const figures: string[] = [];
    const readiness: { name: string; seen: ProbeResult[] }[] = [];
    const startedAt = Date.now();
    await expect.poll(() => attempts.length, { timeout: 30_000, interval: 50 }).toBeGreaterThanOrEqual(10);
    for (const [at, instance] of instances.entries()) {
      const watch = watchReadiness(instance);
      const signalled = Date.now();
      await instance.stop();
      const exited = Date.now();
      expect(instance.proc.exitCode, `instance ${instance.name} exit code; see ${instance.logFile}`).toBe(0);
      const seen = await watch.stop();
      readiness.push({ name: instance.name, seen });

      const restarted = await startInstance(instance.name, instance.port, instance.adminPort);
      const ready = Date.now();
      instances[at] = restarted;
      // As a rolling update waits for the new instance to be in service before it stops the next.
      await expect.poll(() => balancer.backends.find((b) => b.name === instance.name)?.ready, { timeout: 10_000, interval: 20 }).toBe(true);
      const inService = Date.now();
      figures.push(
        `instance ${instance.name}: SIGTERM -> exit ${exited - signalled} ms (readiness seen: ${summary(seen)}), start -> ready ${ready - exited} ms, ready -> routed by the balancer ${inService - ready} ms`,
      );
    }
    // Steady traffic on the two new instances for a moment, then every client finishes its last request.
    const before = sent;
    await expect.poll(() => sent, { timeout: 10_000, interval: 50 }).toBeGreaterThanOrEqual(before + 30);
    stopTraffic = true;
    await Promise.all(clients);
    const trafficMs = Date.now() - startedAt;
    const sentInTraffic = sent;

    expect(failures).toEqual([]);
    expect(balancer.refused).toBe(0);
    // The balancer's own checks saw each instance go from 200 to 503 before its connections were refused.
    for (const b of balancer.backends) {
      expect(b.checks.slice(0, 2), `instance ${b.name}'s health checks`).toEqual(['200', '503']);
      expect(b.checks.indexOf('ECONNREFUSED'), `instance ${b.name}'s health checks`).toBeGreaterThan(1);
    }
    // After SIGTERM each said 503 while it still accepted connections, then refused them; never a 200 again once it said 503.
    for (const { name, seen } of readiness) {
      const first503 = seen.findIndex((r) => statusOf(r) === 503);
      const firstRefused = seen.findIndex(isRefused);
      expect(first503, `instance ${name}: ${summary(seen)}`).toBeGreaterThanOrEqual(0);
      expect(firstRefused, `instance ${name}: ${summary(seen)}`).toBeGreaterThan(first503);
      expect(seen.slice(0, first503).every((r) => statusOf(r) === 200), `instance ${name}: ${summary(seen)}`).toBe(true);
      // Between them only 503s, or a probe whose connection was accepted as the listener closed.
      expect(seen.slice(first503, firstRefused).filter((r) => statusOf(r) !== null && statusOf(r) !== 503), `instance ${name}: ${summary(seen)}`).toEqual([]);
    }

    // No payment lost: every one acknowledged reads back, finished, through either instance.
    await expect
      .poll(async () => (await rows<{ n: number }>(`SELECT count(*)::int AS n FROM payments WHERE partner_id = $1 AND status = 'confirmed'`, [partner.id]))[0]?.n, { timeout: 60_000, interval: 250 })
      .toBe(attempts.length);
    for (const a of attempts) {
      const read = await call('GET', `/payments/${a.paymentId}`);
      expect(read, a.paymentId).toMatchObject({ id: a.paymentId, status: 'confirmed' });
    }
    expect(failures).toEqual([]);

    // None doubled: one payment per key, the one the client was given, and no payment no client was given.
    const keyed = await rows<{ key: string; payment_id: string }>(`SELECT key, payment_id FROM idempotency_keys WHERE partner_id = $1 AND payment_id IS NOT NULL`, [partner.id]);
    expect(new Map(keyed.map((k) => [k.key, k.payment_id]))).toEqual(new Map(attempts.map((a) => [a.key, a.paymentId])));
    const payments = await rows<{ id: string }>(`SELECT id FROM payments WHERE partner_id = $1`, [partner.id]);
    expect(payments.map((p) => p.id).sort()).toEqual(attempts.map((a) => a.paymentId).sort());
    const run: RunSql = async (text) => withClient(async (c) => (await c.query<Record<string, unknown>>(text)).rows);
    expect(await checkInvariants(run)).toEqual([]);

    // No webhook lost: the receiver has every event the outbox holds for the partner, by event id.
    const outbox = async () =>
      (
        await rows<{ event_id: string }>(
          `SELECT d.event_id FROM webhook_deliveries d JOIN webhooks w ON w.id = d.webhook_id WHERE w.partner_id = $1`,
          [partner.id],
        )
      ).map((r) => r.event_id);
    // Every event of the kinds the webhook takes is in the outbox, each payment's confirmation among them.
    const events = await rows<{ id: string }>(`SELECT id FROM events WHERE partner_id = $1 AND event IN ('payment.submitted', 'payment.confirmed')`, [partner.id]);
    expect(events.length).toBeGreaterThanOrEqual(attempts.length);
    expect((await outbox()).sort()).toEqual(events.map((e) => e.id).sort());
    const delivered = () => new Set(receiver.received.map((r) => r.headers['webhook-id']));
    await expect.poll(async () => (await outbox()).filter((id) => !delivered().has(id)), { timeout: 60_000, interval: 250 }).toEqual([]);

    const routed = balancer.backends.map((b) => `${b.name}: ${b.routed} (health checks met ${b.checks.join(' -> ')})`).join(', ');
    console.log(
      [
        `rolling restart: ${sentInTraffic} partner requests sent in ${trafficMs} ms of traffic (${CLIENTS} clients), ${failures.length} failed; ${sent - sentInTraffic} more read every payment back after it (routed in all ${routed})`,
        `  ${attempts.length} payments created, all confirmed and read back; ${events.length} events in the outbox, ${delivered().size} distinct webhooks delivered (${receiver.received.length} deliveries)`,
        ...figures.map((f) => `  ${f}`),
      ].join('\n'),
    );
  }, 300_000);
});
