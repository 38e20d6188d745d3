import { readFileSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { createPartnerKey, serviceEnv, startApiProcess, type ApiProcess } from '../helpers/api-process.js';
import { buildSimulator } from '../../simulator/simulator.app.js';
import type { FixtureFile } from '../../simulator/fixtures.schema.js';
import { checkInvariants, type RunSql } from '../helpers/invariants.js';
import { canRunOwnCluster, createPgCluster, type PgCluster } from '../helpers/pg-cluster.js';
import { startTcpProxy, type TcpProxy } from '../helpers/tcp-proxy.js';
import { startReceiver, type WebhookReceiver } from '../helpers/webhook-receiver.js';
import { freePorts } from '../walkthrough/walkthrough.js';
import { invoiceFixture } from '../helpers/fixtures.js';
import { unique } from '../helpers/own-invoice.js';
import { loadConfig } from '../../src/config/config.js';
import { leasePolicyOf } from '../../src/composition/data.factory.js';
import { listenLocal } from '../helpers/listen-local.js';

/**
 * Fault drills on two API instances sharing a PostgreSQL cluster of this test's own, each part with
 * partners and invoices of its own, so the parts pass alone and in any order.
 *
 * A silent failover: two API instances reach a PostgreSQL cluster of this test's own through
 * a TCP proxy. Under load, the proxy silences every open connection for good (nothing forwarded,
 * nothing closed, as when a primary vanishes and its sockets are never reset) and holds new ones
 * for SILENCE_MS, then lets new connections through. Deadlines, not errors, are all the service
 * has to go on: requests must still answer (503) within the query deadline, at once after the
 * first deadline has passed, readiness must say so within a second, and both instances must serve,
 * confirm and deliver again soon after new connections pass.
 *
 * A frozen holder of an idempotency key: an instance is stopped (SIGSTOP) mid-request, past its
 * key's lease; the retry on the other instance must make the one payment and ministry submission,
 * and the woken instance answer with the same 201.
 *
 * A burst of reads while a ministry system answers status slowly: live checks stay within the
 * system's limit and one per payment at a time, every read answers within the ministry timeout
 * + 1 s, and a payment of that system still goes through.
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
/** Short, with the query deadline, so a key's lease is short enough to freeze its holder past it. */
const MINISTRY_TIMEOUT_MS = 2000;
/** Each instance's cap on one ministry system's status calls in flight; two instances make twice as many. */
const CONCURRENCY_MAX_PER_SOURCE = 8;
/** The settings both instances run with, on top of serviceEnv's. */
const INSTANCE_SETTINGS = {
  DB_QUERY_TIMEOUT_MS: String(QUERY_TIMEOUT_MS),
  DB_CONNECT_TIMEOUT_MS: String(CONNECT_TIMEOUT_MS),
  READY_DB_TIMEOUT_MS: String(READY_TIMEOUT_MS),
  MINISTRY_TIMEOUT_MS: String(MINISTRY_TIMEOUT_MS),
  CONFIRM_CONCURRENCY_PER_SOURCE: '4',
  CONFIRM_CONCURRENCY_MAX_PER_SOURCE: String(CONCURRENCY_MAX_PER_SOURCE),
  // A young payment's next check is never far off, so its confirmation waits on the database alone.
  CONFIRM_BACKOFF_MAX_MS: '2000',
  LOG_LEVEL: 'info',
};
/** How long a request holds its idempotency key before another may take it over, with the settings above. */
const KEY_LEASE_MS = leasePolicyOf(loadConfig(INSTANCE_SETTINGS)).idempotency;
/** The operating contract's bound on a read that asks the ministry live. */
const READ_WITHIN_MS = MINISTRY_TIMEOUT_MS + 1000;
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
    INSTANCE_SETTINGS,
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

/** A partner of its own for a part of the drill: its API key. */
function newPartner(instance: Instance, name: string): Promise<string> {
  return createPartnerKey(instance.adminPort, ADMIN_TOKEN, name);
}

/** A call to the simulator's control API; its answer, or throws when it refused. */
async function control<T = unknown>(method: 'GET' | 'POST', path: string, body?: unknown): Promise<T> {
  const res = await fetch(`${simulatorUrl}/__control${path}`, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (!res.ok) throw new Error(`simulator ${method} ${path}: HTTP ${res.status} ${await res.text()}`);
  return (await res.json()) as T;
}

/** The ids of the invoices a partner finds under the payer register, by amount (each part gives its invoices amounts of their own). */
async function invoicesOf(instance: Instance, apiKey: string, register: string): Promise<Map<number, string>> {
  const search = await call(instance, apiKey, 'GET', `/invoices?ttd=${register}`);
  expect(search.status, JSON.stringify(search.body)).toBe(200);
  return new Map((search.body.invoices as { id: string; amount: number }[]).map((i) => [i.amount, i.id]));
}

/** Freezes the process as a stop-the-world pause, a frozen VM or a SIGSTOP would. */
function freeze(instance: Instance, frozen: boolean): void {
  if (instance.proc.pid === undefined || instance.proc.exitCode !== null) return;
  process.kill(instance.proc.pid, frozen ? 'SIGSTOP' : 'SIGCONT');
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

/** The instance's log lines from `since` on: what one part of the drill made it say. */
function logLines(instance: Instance, since: number): { level: number; msg: string; time: number }[] {
  return readFileSync(instance.logFile, 'utf8')
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as { level: number; msg: string; time: number })
    .filter((l) => l.time >= since);
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
  simulatorUrl = await listenLocal(simulator);
  receiver = await startReceiver();

  // One after the other: the first migrates, the second finds the schema in place.
  instances.push(await startInstance('a', a, aAdmin));
  instances.push(await startInstance('b', b, bAdmin));
}, 120_000);

afterAll(async () => {
  // A part that failed with an instance frozen must not leave it so: a stopped process never ends.
  for (const instance of instances) freeze(instance, false);
  // The silenced connections would hold a stopping instance's pool end forever: close them first.
  await proxy?.close();
  await Promise.all(instances.map((i) => i.stop()));
  await simulator?.close();
  await receiver?.close();
  await cluster?.destroy();
}, 60_000);

describe.skipIf(!canRunOwnCluster())('fault drills (own PostgreSQL cluster behind a proxy, two instances)', () => {
  it('answers within deadlines while every connection is silent, refuses at once once it knows, and serves, confirms and delivers within 10 s of new connections passing', async () => {
    const [a, b] = instances as [Instance, Instance];
    // Lines the other parts made the instances log are theirs to judge.
    const partStart = Date.now();
    const apiKey = await newPartner(a, 'Silent Bank');
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
      const lines = logLines(instance, partStart);
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
    const settled = Math.max(...[a, b].map((i) => logLines(i, partStart).find((l) => l.msg === OUTAGE_LINE)?.time ?? tr)) + CONNECT_TIMEOUT_MS + 500;
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
      knewAt: [a, b].map((i) => `t0+${(logLines(i, partStart).find((l) => l.msg === OUTAGE_LINE)?.time ?? 0) - t0}`),
      requestsDuringSilence: met.length,
      slowestRequestMs: took(met),
      slowestRefusalMs: took(startedSilent.filter((x) => x.startedAt > settled - CONNECT_TIMEOUT_MS - 500)),
      readinessProbes: probes.length,
      slowestReadinessMs: took(probes.filter((p) => p.startedAt >= t0 + READY_DOWN_AFTER_MS)),
      mostHeldAtProxy: Math.max(...steady.map((s) => s.held)),
      paymentsAccepted: { beforeSilence: acceptedAtSilence, total: accepted.length },
    });
  }, 240_000);

  it('a holder of an idempotency key frozen past its lease: the retry on the other instance makes the one payment and submission, and both answer with its 201 body', async () => {
    const [a, b] = instances as [Instance, Instance];
    const partStart = Date.now();
    const apiKey = await newPartner(b, 'Frozen Bank');
    const register = unique('FZ');
    const invoice = invoiceFixture('etax', unique('FZ'), { amount: 4100, payer: { register, name: 'Frozen' } });
    await control('POST', '/invoices', { invoices: [invoice] });
    const invoiceId = (await invoicesOf(b, apiKey, register)).get(invoice.amount) ?? '';
    expect(invoiceId).not.toBe('');
    const key = unique('frozen-holder');
    const submitsOfInvoice = () => control<{ submits: { paymentId: string; repeat: boolean }[]; held: { refNum: string }[] }>('GET', `/submits?refNum=${invoice.refNum}`);

    // The ministry takes A's submit and its answer is held on the way back: A holds the key with
    // its payment at the ministry when it freezes.
    await control('POST', '/submits/hold', { source: 'etax', refNum: invoice.refNum, point: 'after' });
    let onB: Awaited<ReturnType<typeof call>>;
    let onA: { status: number; body: Record<string, unknown> };
    let frozenFor = 0;
    const sentAt = Date.now();
    const answerOfA = fetch(`http://127.0.0.1:${a.port}/api/v1/payments`, {
      method: 'POST',
      headers: { 'x-api-key': apiKey, 'content-type': 'application/json', 'x-idempotency-key': key },
      body: JSON.stringify({ invoiceId }),
      // A is frozen past the key's lease on purpose: only a hang beyond that is a hang.
      signal: AbortSignal.timeout(KEY_LEASE_MS + HANG_MS),
    }).then(
      async (res) => ({ status: res.status, body: (await res.json()) as Record<string, unknown> }),
      (err: unknown) => ({ status: 0, body: { error: String(err) } }),
    );
    try {
      expect(await until(async () => (await submitsOfInvoice()).held.length === 1, HANG_MS), 'A\'s submit never reached the ministry').not.toBeNull();
      freeze(a, true);
      const frozenAt = Date.now();
      const lockedUntil = await withClient(async (c) => {
        const { rows } = await c.query<{ locked_until: Date }>(`SELECT locked_until FROM idempotency_keys WHERE key = $1`, [key]);
        return rows[0]?.locked_until.getTime() ?? 0;
      });
      // The lease the policy gives, counted from the claim, which came after A was asked.
      expect(lockedUntil, 'the key\'s lease ends as LeasePolicy.idempotency says').toBeGreaterThanOrEqual(sentAt + KEY_LEASE_MS);
      expect(lockedUntil).toBeLessThan(Date.now() + KEY_LEASE_MS);
      await sleep(Math.max(0, lockedUntil - Date.now()) + 250);

      onB = await call(b, apiKey, 'POST', '/payments', { invoiceId }, { 'x-idempotency-key': key });
      expect(onB.status, JSON.stringify(onB.body)).toBe(201);
      expect(a.proc.exitCode, 'A stayed frozen throughout').toBeNull();

      // The ministry's answer reaches A as it wakes, long after its own deadline.
      await control('POST', '/submits/release', { source: 'etax', refNum: invoice.refNum });
      freeze(a, false);
      frozenFor = Date.now() - frozenAt;
      onA = await answerOfA;
    } finally {
      freeze(a, false);
      await control('POST', '/submits/release', { source: 'etax', refNum: invoice.refNum }).catch(() => undefined);
    }

    // B finished the key before A woke, so A answers with B's stored answer, marked as a replay.
    const created = onB.body;
    expect(onA.status, JSON.stringify(onA.body)).toBe(201);
    expect(onA.body).toEqual({ ...created, message: 'idempotent' });
    for (const instance of [a, b]) {
      const replay = await call(instance, apiKey, 'POST', '/payments', { invoiceId }, { 'x-idempotency-key': key });
      expect(replay.status, `replay on ${instance.name}`).toBe(201);
      expect(replay.body, `replay on ${instance.name}`).toEqual({ ...created, message: 'idempotent' });
    }

    // One payment, and one submission at the ministry: every other submit repeated its payment id.
    const payments = await withClient(async (c) => (await c.query<{ id: string }>(`SELECT id FROM payments WHERE invoice_id = $1`, [invoiceId])).rows);
    expect(payments.map((p) => p.id)).toEqual([created.id]);
    const { submits, held } = await submitsOfInvoice();
    expect(held).toEqual([]);
    expect(submits.filter((x) => !x.repeat).map((x) => x.paymentId), JSON.stringify(submits)).toEqual([created.id]);
    expect(new Set(submits.map((x) => x.paymentId))).toEqual(new Set([created.id]));

    // The payment goes on as any other: approved at the ministry, it is confirmed.
    await control('POST', '/approve', { refNum: invoice.refNum, source: 'etax' });
    const confirmed = () => withClient(async (c) => (await c.query(`SELECT 1 FROM payments WHERE id = $1 AND status = 'confirmed'`, [created.id])).rowCount === 1);
    expect(await until(confirmed, HANG_MS, 100), 'the payment confirmed once approved').not.toBeNull();

    for (const instance of [a, b]) {
      expect(instance.proc.exitCode, `${instance.name} exited; see ${instance.logFile}`).toBeNull();
      const lines = logLines(instance, partStart);
      expect(lines.filter((l) => l.level >= 50).map((l) => l.msg), `${instance.name}: error lines`).toEqual([]);
      // The database answered all along: a process that was paused must not take itself for an outage.
      expect(lines.filter((l) => l.msg.startsWith('database unavailable')).map((l) => l.msg), `${instance.name}: outage lines`).toEqual([]);
    }
    console.info('frozen key holder drill', { keyLeaseMs: KEY_LEASE_MS, frozenForMs: frozenFor, submits: submits.length, answerOfA: onA.body.message });
  }, 120_000);

  it('a burst of reads while status answers are slow: within the ministry limits, one status call per payment at a time, each read answered within the ministry timeout + 1 s, and a payment still made', async () => {
    const [a, b] = instances as [Instance, Instance];
    const partStart = Date.now();
    const READERS = 10;
    const READS = 200;
    const BURST_MS = 2000;
    const STATUS_DELAY_MS = 1000;
    // Each reader pays two etax invoices of its own; another partner pays one during the burst.
    const readers = await Promise.all(
      Array.from({ length: READERS }, async (_, r) => {
        const register = unique('BR');
        const invoices = [0, 1].map((n) => invoiceFixture('etax', unique('BR'), { amount: 5000 + r * 2 + n, payer: { register, name: 'Burst' } }));
        return { apiKey: await newPartner(a, `Burst Bank ${r}`), register, invoices, payments: [] as string[] };
      }),
    );
    const payerRegister = unique('BP');
    const payerInvoice = invoiceFixture('etax', unique('BP'), { amount: 5900, payer: { register: payerRegister, name: 'Burst payer' } });
    const payerKey = await newPartner(b, 'Burst Payer Bank');
    await control('POST', '/invoices', { invoices: [...readers.flatMap((r) => r.invoices), payerInvoice] });
    for (const [r, reader] of readers.entries()) {
      const ids = await invoicesOf(r % 2 ? a : b, reader.apiKey, reader.register);
      for (const [n, invoice] of reader.invoices.entries()) {
        const paid = await call(n % 2 ? a : b, reader.apiKey, 'POST', '/payments', { invoiceId: ids.get(invoice.amount) }, { 'x-idempotency-key': randomUUID() });
        expect(paid.status, JSON.stringify(paid.body)).toBe(201);
        reader.payments.push(paid.body.id as string);
      }
    }
    const payerInvoiceId = (await invoicesOf(a, payerKey, payerRegister)).get(payerInvoice.amount);
    expect(payerInvoiceId).toBeDefined();

    await control('POST', '/faults', { source: 'etax', mode: 'slow', delayMs: STATUS_DELAY_MS, operation: 'status' });
    type Read = { reader: number; paymentId: string; instance: string; status: number; body: Record<string, unknown>; tookMs: number };
    let reads: Read[];
    let paidDuring: { status: number; body: Record<string, unknown>; tookMs: number };
    let ministry: { calls: number; inFlight: number; maxInFlight: number; maxInFlightPerPayment: number };
    try {
      await control('POST', '/calls/reset');
      // At the burst's height, another partner pays an invoice of the same system.
      const payDuring = (async () => {
        await sleep(BURST_MS / 2);
        const startedAt = Date.now();
        const res = await call(a, payerKey, 'POST', '/payments', { invoiceId: payerInvoiceId }, { 'x-idempotency-key': randomUUID() });
        return { ...res, tookMs: Date.now() - startedAt };
      })();
      // Reads spread evenly over the burst, each reader's over both its payments and both instances.
      reads = await Promise.all(
        Array.from({ length: READS }, async (_, i): Promise<Read> => {
          await sleep((i * BURST_MS) / READS);
          const reader = i % READERS;
          const round = Math.floor(i / READERS);
          const paymentId = readers[reader]?.payments[round % 2] ?? '';
          const instance = Math.floor(round / 2) % 2 ? b : a;
          const startedAt = Date.now();
          const res = await call(instance, readers[reader]?.apiKey ?? '', 'GET', `/payments/${paymentId}`);
          return { reader, paymentId, instance: instance.name, ...res, tookMs: Date.now() - startedAt };
        }),
      );
      paidDuring = await payDuring;
      ministry = await control('GET', '/calls?source=etax&operation=status');
    } finally {
      await control('POST', '/faults', { source: 'etax', mode: 'none', operation: 'status' });
    }

    expect(reads.filter((x) => x.status !== 200 || x.body.id !== x.paymentId), 'reads not answered 200 with their payment').toEqual([]);
    expect(reads.filter((x) => x.tookMs > READ_WITHIN_MS), `reads not answered within ${READ_WITHIN_MS} ms`).toEqual([]);
    expect(ministry.calls, 'the ministry was asked during the burst').toBeGreaterThan(0);
    expect(ministry.maxInFlight, `etax status calls in flight at once: ${JSON.stringify(ministry)}`).toBeLessThanOrEqual(2 * CONCURRENCY_MAX_PER_SOURCE);
    expect(ministry.maxInFlightPerPayment, `status calls of one payment in flight at once: ${JSON.stringify(ministry)}`).toBeLessThanOrEqual(1);
    expect(paidDuring.status, JSON.stringify(paidDuring.body)).toBe(201);

    // The payments go on as any other: approved at the ministry, they are confirmed.
    const paymentIds = [...readers.flatMap((r) => r.payments), paidDuring.body.id as string];
    for (const invoice of [...readers.flatMap((r) => r.invoices), payerInvoice]) await control('POST', '/approve', { refNum: invoice.refNum, source: 'etax' });
    const unconfirmed = () => withClient(async (c) => (await c.query<{ id: string }>(`SELECT id FROM payments WHERE id = ANY($1::uuid[]) AND status <> 'confirmed'`, [paymentIds])).rows);
    expect(await until(async () => (await unconfirmed()).length === 0, HANG_MS, 100), `not confirmed once approved: ${JSON.stringify(await unconfirmed())}`).not.toBeNull();

    for (const instance of [a, b]) {
      expect(instance.proc.exitCode, `${instance.name} exited; see ${instance.logFile}`).toBeNull();
      expect(logLines(instance, partStart).filter((l) => l.level >= 50).map((l) => l.msg), `${instance.name}: error lines`).toEqual([]);
    }
    const tookMs = reads.map((x) => x.tookMs).sort((p, q) => p - q);
    console.info('read burst drill', {
      ministry,
      reads: reads.length,
      readMs: { median: tookMs[Math.floor(tookMs.length / 2)], p99: tookMs[Math.floor(tookMs.length * 0.99)], slowest: tookMs.at(-1) },
      paymentDuringBurstMs: paidDuring.tookMs,
    });
  }, 120_000);
});
