import { readFileSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { serviceEnv, startApiProcess, type ApiProcess } from '../helpers/api-process.js';
import { buildSimulator } from '../../simulator/simulator.app.js';
import type { FixtureFile } from '../../simulator/fixtures.schema.js';
import { checkInvariants, type RunSql } from '../helpers/invariants.js';
import { canRunOwnCluster, createPgCluster, type PgCluster } from '../helpers/pg-cluster.js';
import { startTcpProxy, type TcpProxy } from '../helpers/tcp-proxy.js';
import { startReceiver, type WebhookReceiver } from '../helpers/webhook-receiver.js';
import { freePorts } from '../walkthrough/walkthrough.js';
import { invoiceFixture } from '../helpers/fixtures.js';

/**
 * A silent failover drill: two API instances reach a PostgreSQL cluster of this test's own through
 * a TCP proxy. Under load, the proxy silences every open connection for good (nothing forwarded,
 * nothing closed, as when a primary vanishes and its sockets are never reset) and holds new ones
 * for SILENCE_MS, then lets new connections through. Deadlines, not errors, are all the service
 * has to go on: requests must still answer (503) within the query deadline, at once after the
 * first deadline has passed, readiness must say so within a second, and both instances must serve,
 * confirm and deliver again soon after new connections pass.
 */
const DB = 'silent';
const ADMIN_TOKEN = 'silent-admin-token';
const INVOICES = 120;
/** Kept out of the load: one approved during the silence, one paid on each instance after it. */
const RESERVED = 3;
const QUERY_TIMEOUT_MS = 3000;
const CONNECT_TIMEOUT_MS = 2000;
/** Below the 1 s the drill holds readiness to, which also covers the HTTP round trip. */
const READY_TIMEOUT_MS = 700;
const SILENCE_MS = 12_000;
/** The operating contract's bounds. */
const READY_WITHIN_MS = 1000;
const READY_DOWN_AFTER_MS = 2000;
const REQUEST_WITHIN_MS = QUERY_TIMEOUT_MS + 1000;
const REFUSED_WITHIN_MS = 500;
const RECOVERED_WITHIN_MS = 10_000;
/** Bounds a hang only: a request the contract allows 4 s is given 15 s before the drill calls it hung. */
const HANG_MS = 15_000;
const OUTAGE_LINE = 'database unavailable: background work paused, requests that need it answer 503 until it is back';
const RECOVERY_LINE = 'database available again: background work resumed';

interface Instance extends ApiProcess {
  name: string;
  port: number;
  adminPort: number;
}

/** One request as the partner saw it: status 0 when it got no answer at all (hung past HANG_MS, or the connection failed). */
interface Answer {
  instance: string;
  what: string;
  status: number;
  retryAfter: string | null;
  startedAt: number;
  endedAt: number;
  error?: string;
}

interface Probe {
  instance: string;
  status: number;
  db?: unknown;
  startedAt: number;
  endedAt: number;
}

let cluster: PgCluster;
let proxy: TcpProxy;
let simulator: FastifyInstance;
let simulatorUrl: string;
let receiver: WebhookReceiver;
const instances: Instance[] = [];
const answers: Answer[] = [];

function fixtures(): FixtureFile {
  return {
    invoices: Array.from({ length: INVOICES }, (_, i) =>
      invoiceFixture((['mof', 'etax', 'police'] as const)[i % 3] ?? 'mof', `SF-${i}`, { amount: 3000 + i, payer: { register: '9900996', name: 'Silent' } }),
    ),
  };
}

async function startInstance(name: string, port: number, adminPort: number): Promise<Instance> {
  const env = serviceEnv(
    { databaseUrl: `postgres://postgres@127.0.0.1:${proxy.port}/${DB}`, port, adminPort, adminToken: ADMIN_TOKEN, ministryUrl: simulatorUrl },
    {
      DB_QUERY_TIMEOUT_MS: String(QUERY_TIMEOUT_MS),
      DB_CONNECT_TIMEOUT_MS: String(CONNECT_TIMEOUT_MS),
      READY_DB_TIMEOUT_MS: String(READY_TIMEOUT_MS),
      // A young payment's next check is never far off, so its confirmation waits on the database alone.
      CONFIRM_BACKOFF_MAX_MS: '2000',
      LOG_LEVEL: 'info',
    },
  );
  const started = await startApiProcess(`silent-failover-${name}`, env, `http://127.0.0.1:${port}/api/v1/health/ready`);
  return { name, port, adminPort, ...started };
}

async function call(instance: Instance, key: string, method: string, path: string, body?: unknown, headers: Record<string, string> = {}) {
  const startedAt = Date.now();
  try {
    const res = await fetch(`http://127.0.0.1:${instance.port}/api/v1${path}`, {
      method,
      headers: { 'x-api-key': key, ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(HANG_MS),
    });
    const text = await res.text();
    answers.push({ instance: instance.name, what: `${method} ${path}`, status: res.status, retryAfter: res.headers.get('retry-after'), startedAt, endedAt: Date.now() });
    return { status: res.status, body: text ? (JSON.parse(text) as Record<string, unknown>) : {} };
  } catch (err) {
    answers.push({ instance: instance.name, what: `${method} ${path}`, status: 0, retryAfter: null, startedAt, endedAt: Date.now(), error: String(err) });
    return { status: 0, body: {} };
  }
}

async function readiness(instance: Instance): Promise<Probe> {
  const startedAt = Date.now();
  try {
    const res = await fetch(`http://127.0.0.1:${instance.port}/api/v1/health/ready`, { signal: AbortSignal.timeout(HANG_MS) });
    const body = (await res.json()) as { db?: unknown };
    return { instance: instance.name, status: res.status, db: body.db, startedAt, endedAt: Date.now() };
  } catch {
    return { instance: instance.name, status: 0, startedAt, endedAt: Date.now() };
  }
}

async function approveAtMinistry(refNum: string): Promise<number> {
  const res = await fetch(`${simulatorUrl}/__control/approve`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ refNum }) });
  return res.status;
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

function logLines(instance: Instance): { level: number; msg: string; time: number }[] {
  return readFileSync(instance.logFile, 'utf8')
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as { level: number; msg: string; time: number });
}

function confirmedDelivered(): Set<string> {
  return new Set(
    receiver.received
      .map((r) => JSON.parse(r.body) as { event: string; data: { id: string } })
      .filter((m) => m.event === 'payment.confirmed')
      .map((m) => m.data.id),
  );
}

/** Calls `attempt` every `intervalMs` until it answers true; the time it did, or null past `hangMs`. */
async function until(attempt: () => Promise<boolean>, hangMs = 30_000, intervalMs = 100): Promise<number | null> {
  const giveUp = Date.now() + hangMs;
  while (Date.now() < giveUp) {
    if (await attempt()) return Date.now();
    await sleep(intervalMs);
  }
  return null;
}

const describeTimes = (xs: { startedAt: number; endedAt: number }[], t0: number) => xs.map((x) => ({ ...x, startedAt: `t0+${x.startedAt - t0}`, tookMs: x.endedAt - x.startedAt }));

beforeAll(async () => {
  if (!canRunOwnCluster()) return;
  const [pgPort = 0, a = 0, aAdmin = 0, b = 0, bAdmin = 0] = await freePorts(5);
  cluster = await createPgCluster(pgPort);
  const admin = new pg.Client({ connectionString: cluster.url('postgres') });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${DB}`);
  await admin.end();
  proxy = await startTcpProxy({ host: '127.0.0.1', port: cluster.port });

  // Payments are approved by the drill itself, one as the database is silent.
  simulator = await buildSimulator({ fixtures: fixtures(), autoApproveMs: 0 });
  await simulator.listen({ port: 0, host: '127.0.0.1' });
  const sa = simulator.server.address();
  simulatorUrl = `http://127.0.0.1:${typeof sa === 'object' && sa ? sa.port : 0}`;
  receiver = await startReceiver();

  // One after the other: the first migrates, the second finds the schema in place.
  instances.push(await startInstance('a', a, aAdmin));
  instances.push(await startInstance('b', b, bAdmin));
}, 120_000);

afterAll(async () => {
  // The silenced connections would hold a stopping instance's pool end forever: close them first.
  await proxy?.close();
  await Promise.all(instances.map((i) => i.stop()));
  await simulator?.close();
  await receiver?.close();
  await cluster?.destroy();
}, 60_000);

describe.skipIf(!canRunOwnCluster())('silent failover (own PostgreSQL cluster behind a proxy, two instances)', () => {
  it('answers within deadlines while every connection is silent, refuses at once once it knows, and serves, confirms and delivers within 10 s of new connections passing', async () => {
    const [a, b] = instances as [Instance, Instance];
    const partnerRes = await fetch(`http://127.0.0.1:${a.adminPort}/admin/partners`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'Silent Bank' }),
    });
    expect(partnerRes.status).toBe(201);
    const apiKey = ((await partnerRes.json()) as { apiKey: string }).apiKey;
    const hook = await call(a, apiKey, 'POST', '/webhooks', { url: receiver.url, secret: 'silent-secret-0123456789', events: ['payment.confirmed'] });
    expect(hook.status).toBe(201);
    const search = await call(b, apiKey, 'GET', '/invoices?ttd=9900996');
    const invoices = search.body.invoices as { id: string; amount: number }[];
    const invoiceIds = invoices.map((i) => i.id);
    expect(invoiceIds).toHaveLength(INVOICES);
    // Each fixture's amount is unique and names its reference at the ministry.
    const refNumOf = new Map(invoices.map((i) => [i.id, `SF-${i.amount - 3000}`]));
    const [approvedDuringSilence, afterOnA, afterOnB] = invoiceIds.slice(0, RESERVED) as [string, string, string];
    const loadInvoices = invoiceIds.slice(RESERVED);

    // The payment the ministry approves while the database is silent: submitted, not yet approved.
    const held = await call(a, apiKey, 'POST', '/payments', { invoiceId: approvedDuringSilence }, { 'x-idempotency-key': 'approved-during-silence' });
    expect(held.status, JSON.stringify(held.body)).toBe(201);
    const heldPayment = { id: held.body.id as string, refNum: refNumOf.get(approvedDuringSilence) ?? '' };

    // Four clients pay through both instances, each payment approved at the ministry once accepted,
    // and read a payment back; a refused payment is tried again with its own key.
    const accepted: { id: string; refNum: string; approved: boolean }[] = [];
    let next = 0;
    let stopLoad = false;
    const clients = Array.from({ length: 4 }, async (_, c) => {
      while (!stopLoad && next < loadInvoices.length) {
        const invoiceId = loadInvoices[next++] as string;
        const key = randomUUID();
        for (let n = 0; !stopLoad; n++) {
          const target = (c + n) % 2 === 0 ? a : b;
          const res = await call(target, apiKey, 'POST', '/payments', { invoiceId }, { 'x-idempotency-key': key });
          if (res.status === 201) {
            const payment = { id: res.body.id as string, refNum: refNumOf.get(invoiceId) ?? '', approved: false };
            accepted.push(payment);
            payment.approved = (await approveAtMinistry(payment.refNum)) === 200;
            await call(target === a ? b : a, apiKey, 'GET', `/payments/${payment.id}`);
            break;
          }
          // A refusal is answered at once while the database is away: pace the retries.
          await sleep(100);
        }
      }
    });

    // Webhooks are flowing before the silence.
    expect(await until(async () => confirmedDelivered().size >= 8), 'fewer than 8 payment.confirmed delivered under load before the silence').not.toBeNull();

    const acceptedAtSilence = accepted.length;
    expect(next, 'the load still has invoices to pay').toBeLessThan(loadInvoices.length);
    const t0 = Date.now();
    proxy.silence();
    const silenceEnds = t0 + SILENCE_MS;

    // Readiness asked on both instances all through the silence; the proxy's held connections counted.
    const probes: Probe[] = [];
    const heldSamples: { at: number; held: number }[] = [];
    const watchers = [
      ...[a, b].map(async (instance) => {
        while (Date.now() < silenceEnds) {
          probes.push(await readiness(instance));
          await sleep(150);
        }
      }),
      (async () => {
        while (Date.now() < silenceEnds) {
          heldSamples.push({ at: Date.now(), held: proxy.heldOpen() });
          await sleep(50);
        }
      })(),
    ];
    await sleep(1000);
    expect(await approveAtMinistry(heldPayment.refNum), 'the ministry approves the held payment during the silence').toBe(200);
    await Promise.all(watchers);
    await sleep(Math.max(0, silenceEnds - Date.now()));

    proxy.restore();
    const tr = Date.now();
    const recovery = await Promise.all([
      ...[a, b].map((instance) => until(async () => (await readiness(instance)).status === 200)),
      until(async () => (await call(a, apiKey, 'POST', '/payments', { invoiceId: afterOnA }, { 'x-idempotency-key': 'after-on-a' })).status === 201),
      until(async () => (await call(b, apiKey, 'POST', '/payments', { invoiceId: afterOnB }, { 'x-idempotency-key': 'after-on-b' })).status === 201),
      until(async () => confirmedDelivered().has(heldPayment.id)),
    ]);
    const [readyA = null, readyB = null, acceptedOnA = null, acceptedOnB = null, heldDelivered = null] = recovery.map((at) => (at === null ? null : at - tr));

    stopLoad = true;
    await Promise.all(clients);

    // No process died.
    for (const instance of [a, b]) expect(instance.proc.exitCode, `${instance.name} exited; see ${instance.logFile}`).toBeNull();

    // Within 10 s of new connections passing: ready, accepting payments, and the payment the
    // ministry approved during the silence confirmed and delivered.
    const recoveredIn = { readyA, readyB, acceptedOnA, acceptedOnB, heldDelivered };
    for (const [what, ms] of Object.entries(recoveredIn)) {
      expect(ms !== null && ms <= RECOVERED_WITHIN_MS, `${what} after ${ms === null ? 'never (30 s)' : `${ms} ms`} of new connections passing: ${JSON.stringify(recoveredIn)}`).toBe(true);
    }

    // Readiness: 503 {db: down} within 1 s on both instances from 2 s into the silence.
    for (const instance of [a, b]) {
      const due = probes.filter((p) => p.instance === instance.name && p.startedAt >= t0 + READY_DOWN_AFTER_MS);
      expect(due.length, `readiness of ${instance.name} asked during the silence`).toBeGreaterThanOrEqual(5);
      const off = due.filter((p) => p.status !== 503 || p.db !== 'down' || p.endedAt - p.startedAt > READY_WITHIN_MS);
      expect(off, `readiness of ${instance.name} not a 503 {db: down} within ${READY_WITHIN_MS} ms`).toEqual([]);
    }

    // Every partner request that met the silence answered within the query deadline + 1 s, with a
    // 503 and Retry-After unless it had finished its database work before the silence began.
    const met = answers.filter((x) => x.endedAt >= t0 && x.startedAt < tr);
    expect(met.length, 'partner requests during the silence').toBeGreaterThan(10);
    expect(describeTimes(met.filter((x) => x.status === 0 || x.endedAt - x.startedAt > REQUEST_WITHIN_MS), t0), `requests not answered within ${REQUEST_WITHIN_MS} ms`).toEqual([]);
    const startedSilent = met.filter((x) => x.startedAt >= t0);
    expect(describeTimes(startedSilent.filter((x) => x.status !== 503 || !/^[0-9]+$/.test(x.retryAfter ?? '')), t0), 'requests during the silence not a 503 with Retry-After').toEqual([]);
    expect(met.filter((x) => x.status >= 500 && x.status !== 503), 'no 5xx but 503').toEqual([]);

    // Once a query has passed its deadline, the process knows: each instance logged the outage once,
    // within a deadline of the silence, and answered every later request at once.
    for (const instance of [a, b]) {
      const lines = logLines(instance);
      const outage = lines.filter((l) => l.msg.startsWith('database unavailable: '));
      expect(outage.map((l) => `t0+${l.time - t0} ${l.msg}`), `${instance.name}: one outage line`).toHaveLength(1);
      expect(outage[0]?.msg).toBe(OUTAGE_LINE);
      const knewAt = outage[0]?.time ?? 0;
      expect(knewAt - t0, `${instance.name} learned of the outage at t0+${knewAt - t0} ms`).toBeLessThanOrEqual(REQUEST_WITHIN_MS);
      const later = startedSilent.filter((x) => x.instance === instance.name && x.startedAt > knewAt);
      expect(later.length, `${instance.name}: requests after it knew`).toBeGreaterThan(5);
      expect(describeTimes(later.filter((x) => x.endedAt - x.startedAt > REFUSED_WITHIN_MS), t0), `${instance.name}: requests after it knew not refused within ${REFUSED_WITHIN_MS} ms`).toEqual([]);
      const recoveredLines = lines.filter((l) => l.msg === RECOVERY_LINE);
      expect(recoveredLines.map((l) => `t0+${l.time - t0}`), `${instance.name}: one recovery line, after new connections passed`).toHaveLength(1);
      expect(recoveredLines[0]?.time ?? 0).toBeGreaterThanOrEqual(tr);
      expect(lines.filter((l) => l.level >= 50).map((l) => l.msg), `${instance.name}: error lines`).toEqual([]);
    }

    // One probe at a time: once both know (and the pools' connection attempts made before have
    // timed out), each instance has at most its one readiness/probe connection waiting at the proxy.
    const settled = Math.max(...[a, b].map((i) => logLines(i).find((l) => l.msg === OUTAGE_LINE)?.time ?? tr)) + CONNECT_TIMEOUT_MS + 500;
    const steady = heldSamples.filter((s) => s.at >= settled);
    expect(steady.length, 'held connections sampled once both knew').toBeGreaterThan(10);
    expect(Math.max(...steady.map((s) => s.held)), `connections waiting at the proxy: ${JSON.stringify(steady.map((s) => s.held))}`).toBeLessThanOrEqual(2);

    // Every payment accepted and approved is confirmed and delivered; the books hold.
    const mustConfirm = [heldPayment.id, ...accepted.filter((p) => p.approved).map((p) => p.id)];
    expect(mustConfirm.length).toBeGreaterThan(5);
    const undelivered = () => mustConfirm.filter((id) => !confirmedDelivered().has(id));
    expect(await until(async () => undelivered().length === 0, 60_000, 250), `not delivered: ${JSON.stringify(undelivered())}`).not.toBeNull();
    const run: RunSql = (text) => withClient(async (c) => (await c.query<Record<string, unknown>>(text)).rows);
    expect(await checkInvariants(run)).toEqual([]);

    const took = (xs: { startedAt: number; endedAt: number }[]) => Math.max(0, ...xs.map((x) => x.endedAt - x.startedAt));
    console.info('silent failover drill', {
      recoveredIn,
      knewAt: [a, b].map((i) => `t0+${(logLines(i).find((l) => l.msg === OUTAGE_LINE)?.time ?? 0) - t0}`),
      requestsDuringSilence: met.length,
      slowestRequestMs: took(met),
      slowestRefusalMs: took(startedSilent.filter((x) => x.startedAt > settled - CONNECT_TIMEOUT_MS - 500)),
      readinessProbes: probes.length,
      slowestReadinessMs: took(probes.filter((p) => p.startedAt >= t0 + READY_DOWN_AFTER_MS)),
      mostHeldAtProxy: Math.max(...steady.map((s) => s.held)),
      paymentsAccepted: { beforeSilence: acceptedAtSilence, total: accepted.length },
    });
  }, 240_000);
});
