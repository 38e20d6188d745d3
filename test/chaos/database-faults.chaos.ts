import { readFileSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createPartnerKey, serviceEnv, startApiProcess, type ApiProcess } from '../helpers/api-process.js';
import type { FastifyInstance } from 'fastify';
import { buildSimulator } from '../../simulator/simulator.app.js';
import type { FixtureFile } from '../../simulator/fixtures.schema.js';
import { checkInvariants, type RunSql } from '../helpers/invariants.js';
import { canRunOwnCluster, createPgCluster, type PgCluster } from '../helpers/pg-cluster.js';
import { startReceiver, type WebhookReceiver } from '../helpers/webhook-receiver.js';
import { freePorts } from '../walkthrough/walkthrough.js';
import { invoiceFixture } from '../helpers/fixtures.js';
import { loadConfig } from '../../src/config/config.js';
import { leasePolicyOf } from '../../src/composition/data.factory.js';
import { listenLocal } from '../helpers/listen-local.js';

/** How long a cut-off request's idempotency key stays locked: its lease, with the deadlines the processes run with (the defaults). */
const KEY_LEASE_MS = leasePolicyOf(loadConfig({})).idempotency;

/**
 * A database fault drill: two API instances on a PostgreSQL cluster of this test's own, with
 * payments, confirmations and webhook deliveries in flight, while the service's connections are
 * terminated three times and the cluster is restarted once. Both processes must live through it,
 * answer 503 (never 500) while the database is away, serve again soon after it is back, and
 * finish every payment they accepted with its confirmation delivered.
 */
const INVOICES = 60;
const DB = 'faults';
const ADMIN_TOKEN = 'faults-admin-token';
const OUTAGE_LINE = 'database unavailable: background work paused, requests that need it answer 503 until it is back';
const RECOVERY_LINE = 'database available again: background work resumed';

interface Instance extends ApiProcess {
  name: string;
  port: number;
  adminPort: number;
}

interface Attempt {
  key: string;
  invoiceId: string;
  paymentId: string | null;
}

let cluster: PgCluster;
let simulator: FastifyInstance;
let simulatorUrl: string;
let receiver: WebhookReceiver;
const instances: Instance[] = [];
/** Every status either instance answered, with what was asked. */
const answers: { status: number; what: string; during: string }[] = [];
let phase = 'load';

function fixtures(): FixtureFile {
  return {
    invoices: Array.from({ length: INVOICES }, (_, i) =>
      invoiceFixture((['mof', 'etax', 'police'] as const)[i % 3] ?? 'mof', `DBF-${i}`, { amount: 2000 + i, payer: { register: '9900995', name: 'Faults' } }),
    ),
  };
}

async function startInstance(name: string, port: number, adminPort: number): Promise<Instance> {
  const env = serviceEnv({ databaseUrl: cluster.url(DB), port, adminPort, adminToken: ADMIN_TOKEN, ministryUrl: simulatorUrl }, { DB_CONNECT_TIMEOUT_MS: '2000', LOG_LEVEL: 'info' });
  const started = await startApiProcess(`database-faults-${name}`, env, `http://127.0.0.1:${port}/api/v1/health/ready`);
  return { name, port, adminPort, ...started };
}

async function call(instance: Instance, key: string, method: string, path: string, body?: unknown, headers: Record<string, string> = {}) {
  const res = await fetch(`http://127.0.0.1:${instance.port}/api/v1${path}`, {
    method,
    headers: { 'x-api-key': key, ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(15_000),
  });
  const text = await res.text();
  answers.push({ status: res.status, what: `${instance.name} ${method} ${path}`, during: phase });
  return { status: res.status, headers: res.headers, body: text ? (JSON.parse(text) as Record<string, unknown>) : {} };
}

async function withClient<T>(fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: cluster.url(DB) });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

/** Ends every connection the instances hold, as an operator's `pg_terminate_backend` or a proxy's idle cull would. */
async function terminateServiceConnections(): Promise<number> {
  return withClient(async (client) => {
    const { rows } = await client.query(
      `SELECT pg_terminate_backend(pid) AS ended FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid() AND backend_type = 'client backend'`,
      [DB],
    );
    return rows.length;
  });
}

function logLines(instance: Instance): { level: number; msg: string }[] {
  return readFileSync(instance.logFile, 'utf8')
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as { level: number; msg: string });
}

beforeAll(async () => {
  if (!canRunOwnCluster()) return;
  const [pgPort = 0, a = 0, aAdmin = 0, b = 0, bAdmin = 0] = await freePorts(5);
  cluster = await createPgCluster(pgPort);
  const admin = new pg.Client({ connectionString: cluster.url('postgres') });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${DB}`);
  await admin.end();

  simulator = await buildSimulator({ fixtures: fixtures(), autoApproveMs: 200 });
  simulatorUrl = await listenLocal(simulator);
  receiver = await startReceiver();

  // One after the other: the first migrates, the second finds the schema in place.
  instances.push(await startInstance('a', a, aAdmin));
  instances.push(await startInstance('b', b, bAdmin));
}, 120_000);

afterAll(async () => {
  await Promise.all(instances.map((i) => i.stop()));
  await simulator?.close();
  await receiver?.close();
  await cluster?.destroy();
}, 60_000);

describe.skipIf(!canRunOwnCluster())('database faults (own PostgreSQL cluster, two instances)', () => {
  it('survives terminated connections and a restart: 503 while away, serving within 5 s of its return, every payment confirmed and delivered', async () => {
    const [a, b] = instances as [Instance, Instance];
    const apiKey = await createPartnerKey(a.adminPort, ADMIN_TOKEN, 'Faults Bank');
    const hook = await call(a, apiKey, 'POST', '/webhooks', { url: receiver.url, secret: 'faults-secret-0123456789', events: ['payment.confirmed'] });
    expect(hook.status).toBe(201);
    const search = await call(b, apiKey, 'GET', '/invoices?ttd=9900995');
    const invoiceIds = (search.body.invoices as { id: string }[]).map((i) => i.id);
    expect(invoiceIds).toHaveLength(INVOICES);

    // The last few invoices are kept for the outage itself.
    const attempts: Attempt[] = invoiceIds.slice(0, INVOICES - 4).map((invoiceId) => ({ key: randomUUID(), invoiceId, paymentId: null }));
    const reserved = invoiceIds.slice(INVOICES - 4);
    const acknowledged = () => attempts.filter((x) => x.paymentId).length;

    async function tryPay(attempt: Attempt, n: number): Promise<void> {
      const target = n % 2 === 0 ? a : b;
      const res = await call(target, apiKey, 'POST', '/payments', { invoiceId: attempt.invoiceId }, { 'x-idempotency-key': attempt.key });
      if (res.status === 201) attempt.paymentId = res.body.id as string;
    }

    // Four clients pay through both instances, one invoice after another, while the faults land.
    let next = 0;
    let stopLoad = false;
    const clients = Array.from({ length: 4 }, async (_, c) => {
      while (!stopLoad && next < attempts.length) {
        const attempt = attempts[next++] as Attempt;
        await tryPay(attempt, next + c);
        // Reads of paid payments too: the live check reaches the ministry and writes.
        const seen = attempts.find((x) => x.paymentId);
        if (seen?.paymentId) await call(next % 2 ? a : b, apiKey, 'GET', `/payments/${seen.paymentId}`);
      }
    });

    for (let round = 1; round <= 3; round++) {
      const before = acknowledged();
      await expect.poll(acknowledged, { timeout: 30_000, interval: 50 }).toBeGreaterThanOrEqual(Math.min(before + 4, attempts.length));
      phase = `termination ${round}`;
      expect(await terminateServiceConnections()).toBeGreaterThan(0);
    }
    const beforeRestart = acknowledged();
    await expect.poll(acknowledged, { timeout: 30_000, interval: 50 }).toBeGreaterThanOrEqual(Math.min(beforeRestart + 4, attempts.length));

    phase = 'restart';
    await cluster.stop();
    // While it is away, both instances say so: 503 with Retry-After on the API, readiness down, liveness up.
    for (const [i, instance] of [a, b].entries()) {
      const ready = await fetch(`http://127.0.0.1:${instance.port}/api/v1/health/ready`);
      expect(ready.status).toBe(503);
      expect(await ready.json()).toMatchObject({ db: 'down' });
      expect((await fetch(`http://127.0.0.1:${instance.port}/api/v1/health/live`)).status).toBe(200);
      const refused = await call(instance, apiKey, 'POST', '/payments', { invoiceId: reserved[i] }, { 'x-idempotency-key': `outage-${i}` });
      expect(refused.status, JSON.stringify(refused.body)).toBe(503);
      expect(refused.headers.get('retry-after')).toMatch(/^[0-9]+$/);
      expect(refused.body).toMatchObject({ statusCode: 503, error: 'Service Unavailable' });
    }
    await cluster.start();
    const back = Date.now();
    phase = 'recovered';
    for (const instance of [a, b]) {
      await expect.poll(async () => (await fetch(`http://127.0.0.1:${instance.port}/api/v1/health/ready`)).status, { timeout: 10_000, interval: 100 }).toBe(200);
      await expect.poll(async () => (await call(instance, apiKey, 'GET', '/reports/summary')).status, { timeout: 10_000, interval: 100 }).toBe(200);
    }
    // The operating contract: both serve again within 5 s of the database accepting connections.
    expect(Date.now() - back).toBeLessThan(5000);

    stopLoad = true;
    await Promise.all(clients);
    // The payments refused during the outage go through with the same key once it is back.
    for (const [i, instance] of [a, b].entries()) {
      const retried = await call(instance, apiKey, 'POST', '/payments', { invoiceId: reserved[i] }, { 'x-idempotency-key': `outage-${i}` });
      expect(retried.status, JSON.stringify(retried.body)).toBe(201);
      attempts.push({ key: `outage-${i}`, invoiceId: reserved[i] as string, paymentId: retried.body.id as string });
    }
    // Every other payment is finished by retrying its own key: a cut-off request left nothing half-done.
    for (const [n, attempt] of attempts.entries()) {
      if (attempt.paymentId) continue;
      await vi.waitFor(
        async () => {
          await tryPay(attempt, n);
          if (!attempt.paymentId) throw new Error(`payment of ${attempt.invoiceId} not made yet`);
        },
        // A request cut off with the database could not give its key back: the key waits out its lease.
        { timeout: KEY_LEASE_MS + 22_000, interval: 500 },
      );
    }

    // Both processes lived through all of it.
    for (const instance of [a, b]) expect(instance.proc.exitCode, `${instance.name} exited`).toBeNull();

    const paymentIds = attempts.map((x) => x.paymentId as string);
    await expect
      .poll(async () => withClient(async (c) => (await c.query(`SELECT count(*)::int AS n FROM payments WHERE id = ANY($1::uuid[]) AND status = 'confirmed'`, [paymentIds])).rows[0].n as number), {
        timeout: 60_000,
        interval: 250,
      })
      .toBe(paymentIds.length);
    const confirmedAt = () =>
      new Set(
        receiver.received
          .map((r) => JSON.parse(r.body) as { event: string; data: { id: string } })
          .filter((m) => m.event === 'payment.confirmed')
          .map((m) => m.data.id),
      );
    await expect.poll(() => paymentIds.filter((id) => !confirmedAt().has(id)), { timeout: 60_000, interval: 250 }).toEqual([]);

    // Never a 500: a fault is a 503 the client can retry.
    expect(answers.filter((x) => x.status >= 500 && x.status !== 503)).toEqual([]);
    expect(answers.some((x) => x.status === 503)).toBe(true);

    // Each instance logged the outage once and its end once, and no job error storm.
    for (const instance of [a, b]) {
      const lines = logLines(instance);
      expect(lines.filter((l) => l.msg === OUTAGE_LINE).length, instance.name).toBeGreaterThanOrEqual(1);
      // Four faults: a line as each begins (a late error from a connection cut by the same fault may count once more).
      expect(lines.filter((l) => l.msg === OUTAGE_LINE).length, instance.name).toBeLessThanOrEqual(8);
      expect(lines.filter((l) => l.msg === RECOVERY_LINE).length, instance.name).toBe(lines.filter((l) => l.msg === OUTAGE_LINE).length);
      expect(lines.filter((l) => l.level >= 50).map((l) => l.msg), instance.name).toEqual([]);
    }

    const run: RunSql = (text) => withClient(async (c) => (await c.query<Record<string, unknown>>(text)).rows);
    expect(await checkInvariants(run)).toEqual([]);
  }, 240_000);
});
