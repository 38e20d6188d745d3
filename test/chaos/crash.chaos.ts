import type { ChildProcess } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { buildSimulator } from '../../simulator/simulator.app.js';
import type { FixtureFile } from '../../simulator/fixtures.schema.js';
import type { FastifyInstance } from 'fastify';
import { checkInvariants, type RunSql } from '../helpers/invariants.js';
import { serviceEnv, startApiProcess } from '../helpers/api-process.js';
import { freePorts } from '../walkthrough/walkthrough.js';
import { loadConfig } from '../../src/config/config.js';
import { leasePolicyOf } from '../../src/composition/data.factory.js';
import { listenLocal } from '../helpers/listen-local.js';

/**
 * Kills the API with SIGKILL while payments, confirmations and webhook deliveries are in flight,
 * restarts it on the same PostgreSQL, and checks that nothing the client saw was lost or doubled.
 */
const DATABASE_URL = process.env.DATABASE_URL;
const ROUNDS = 4;
const PER_ROUND = 12;
const INVOICES = ROUNDS * PER_ROUND;

const ADMIN_TOKEN = 'chaos-admin-token';
let dbName: string;
let dbUrl: string;
let simulator: FastifyInstance;
let simulatorUrl: string;
let receiver: Server;
/** A second ministry simulator (no auto-approval) for the linked-invoice crash test. */
let linkedSimulator: FastifyInstance;
let linkedSimulatorUrl: string;
let releaseHeldSubmits: () => void = () => undefined;
let receiverUrl: string;
const received: { event: string; id: string }[] = [];
let child: ChildProcess | null = null;
let apiPort: number;
let adminPort: number;


function fixtures(): FixtureFile {
  return {
    invoices: Array.from({ length: INVOICES }, (_, i) => ({
      source: (['mof', 'etax', 'police'] as const)[i % 3] as 'mof' | 'etax' | 'police',
      refNum: `CH-${i}`,
      description: 'chaos',
      amount: 1000 + i,
      status: 'open' as const,
      dueDate: '2099-01-01T00:00:00.000Z',
      issuedAt: null,
      payer: { register: '9900990', name: 'Chaos' },
      payee: { id: 'ORG-1', name: 'Org' },
    })),
  };
}

function linkedFixtures(): FixtureFile {
  const invoice = (refNum: string, linkedRefNums: string[] = []) => ({
    source: 'mof' as const,
    refNum,
    description: 'chaos linked',
    amount: 700,
    status: 'open' as const,
    dueDate: null,
    issuedAt: null,
    payer: { register: '9900991', name: 'Chaos Linked' },
    payee: { id: 'ORG-1', name: 'Org' },
    linkedRefNums,
  });
  return { invoices: [invoice('CH-LA1', ['CH-LB1']), invoice('CH-LB1'), invoice('CH-LA2', ['CH-LB2']), invoice('CH-LB2')] };
}

/**
 * The ministry accepts CH-LA1's payment at once but holds its answer until released, so the
 * service can be killed after the accept and before it records anything.
 */
async function linkedPayments(): Promise<{ refNum: string; status: string }[]> {
  const res = await fetch(`${linkedSimulatorUrl}/__control/payments`);
  return ((await res.json()) as { payments: { refNum: string; status: string }[] }).payments;
}

async function buildLinkedSimulator(): Promise<FastifyInstance> {
  const sim = await buildSimulator({ fixtures: linkedFixtures(), autoApproveMs: 0 });
  const held = new Promise<void>((resolve) => (releaseHeldSubmits = resolve));
  sim.addHook('onSend', async (request, _reply, payload) => {
    const body = request.body as { invoiceNo?: string } | undefined;
    if (request.method === 'POST' && request.url === '/mof/api/payments' && body?.invoiceNo === 'CH-LA1') await held;
    return payload;
  });
  return sim;
}

let starts = 0;

/** How long a killed request's idempotency key stays locked: its lease, with the deadlines the processes run with (the defaults). */
const KEY_LEASE_MS = leasePolicyOf(loadConfig({})).idempotency;

async function startApi(ministryUrl = simulatorUrl): Promise<void> {
  // Rate limits in Redis when the run names one, as CI's does.
  const redis: Record<string, string> = process.env.REDIS_URL ? { REDIS_URL: process.env.REDIS_URL } : {};
  const env = serviceEnv({ databaseUrl: dbUrl, port: apiPort, adminPort, adminToken: ADMIN_TOKEN, ministryUrl }, redis);
  child = (await startApiProcess(`chaos-api-${++starts}`, env, `http://127.0.0.1:${apiPort}/api/v1/health/ready`)).proc;
}

async function killApi(): Promise<void> {
  const proc = child;
  if (!proc || proc.exitCode !== null) return;
  const exited = new Promise((r) => proc.once('exit', r));
  proc.kill('SIGKILL');
  await exited;
  child = null;
}

async function admin(method: string, path: string, body?: unknown) {
  const res = await fetch(`http://127.0.0.1:${adminPort}${path}`, {
    method,
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return res.json() as Promise<Record<string, unknown>>;
}

async function api(key: string, method: string, path: string, body?: unknown, headers: Record<string, string> = {}) {
  const res = await fetch(`http://127.0.0.1:${apiPort}/api/v1${path}`, {
    method,
    headers: { 'x-api-key': key, ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: text ? (JSON.parse(text) as Record<string, unknown>) : {} };
}

/** The money invariants over the chaos database, through a short-lived client. */
async function booksViolations(): Promise<unknown[]> {
  const client = new pg.Client({ connectionString: dbUrl });
  await client.connect();
  try {
    const run: RunSql = async (text) => (await client.query<Record<string, unknown>>(text)).rows;
    return await checkInvariants(run);
  } finally {
    await client.end();
  }
}

async function queryRows<T>(text: string, params: unknown[] = []): Promise<T[]> {
  const client = new pg.Client({ connectionString: dbUrl });
  await client.connect();
  try {
    return (await client.query(text, params)).rows as T[];
  } finally {
    await client.end();
  }
}

/** Asks `check` again until it holds; the timeout only bounds a regression, nothing asserts a time. */
async function eventually(check: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  await expect.poll(check, { timeout: timeoutMs, interval: 200 }).toBe(true);
}

beforeAll(async () => {
  if (!DATABASE_URL) return;
  dbName = `chaos_${Date.now()}`;
  const client = new pg.Client({ connectionString: DATABASE_URL });
  await client.connect();
  await client.query(`CREATE DATABASE ${dbName}`);
  await client.end();
  const url = new URL(DATABASE_URL);
  url.pathname = `/${dbName}`;
  dbUrl = url.toString();

  simulator = await buildSimulator({ fixtures: fixtures(), autoApproveMs: 150 });
  simulatorUrl = await listenLocal(simulator);

  linkedSimulator = await buildLinkedSimulator();
  linkedSimulatorUrl = await listenLocal(linkedSimulator);

  receiver = createServer((req, res) => {
    let data = '';
    req.on('data', (c: Buffer) => (data += c.toString()));
    req.on('end', () => {
      const parsed = JSON.parse(data) as { event: string; data: { id: string } };
      received.push({ event: parsed.event, id: parsed.data.id });
      res.writeHead(200).end();
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  const ra = receiver.address();
  receiverUrl = `http://127.0.0.1:${typeof ra === 'object' && ra ? ra.port : 0}/hook`;

  [apiPort = 0, adminPort = 0] = await freePorts(2);
}, 60_000);

afterAll(async () => {
  if (!DATABASE_URL) return;
  await killApi();
  await simulator?.close();
  releaseHeldSubmits();
  await linkedSimulator?.close();
  await new Promise((r) => receiver?.close(r));
  const client = new pg.Client({ connectionString: DATABASE_URL });
  await client.connect();
  await client.query(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`);
  await client.end();
});

interface Attempt {
  key: string;
  invoiceId: string;
  seenId: string | null;
}

describe.skipIf(!DATABASE_URL)('crash consistency (SIGKILL)', () => {
  it('keeps every acknowledged payment, pays no invoice twice and delivers every confirmation', async () => {
    // Whatever ran before, this case's API runs against the auto-approving simulator.
    await killApi();
    await startApi();
    const partner = await admin('POST', '/admin/partners', { name: 'Chaos Bank' });
    const apiKey = partner.apiKey as string;
    const hook = await api(apiKey, 'POST', '/webhooks', { url: receiverUrl, secret: 'chaos-secret-0123456789', events: ['payment.submitted', 'payment.confirmed'] });
    expect(hook.status).toBe(201);
    const search = await api(apiKey, 'GET', '/invoices?ttd=9900990');
    const invoiceIds = (search.body.invoices as { id: string }[]).map((i) => i.id);
    expect(invoiceIds).toHaveLength(INVOICES);

    const attempts: Attempt[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      const batch = invoiceIds.slice(round * PER_ROUND, (round + 1) * PER_ROUND).map((invoiceId) => ({ key: randomUUID(), invoiceId, seenId: null as string | null }));
      attempts.push(...batch);
      const inflight = batch.map(async (a) => {
        try {
          const res = await api(apiKey, 'POST', '/payments', { invoiceId: a.invoiceId }, { 'x-idempotency-key': a.key });
          if (res.status === 201) a.seenId = res.body.id as string;
        } catch {
          // the server died under this request: the client saw nothing
        }
      });
      // Real elapsed time is the point: the kill lands at a random moment of the requests in flight,
      // and there is no state to wait for that would pick that moment.
      await new Promise((r) => setTimeout(r, 20 + Math.floor(Math.random() * 300)));
      await killApi();
      await Promise.all(inflight);
      await startApi();
    }

    console.log(`chaos: ${attempts.filter((a) => a.seenId).length} of ${attempts.length} payments acknowledged before the kills`);
    for (const a of attempts) {
      // 409: the killed request still holds the key until its lock expires; a client backs off.
      const retry = await vi.waitFor(
        async () => {
          const res = await api(apiKey, 'POST', '/payments', { invoiceId: a.invoiceId }, { 'x-idempotency-key': a.key });
          if (res.status === 409) throw new Error(`key ${a.key} still locked: ${JSON.stringify(res.body)}`);
          return res;
        },
        { timeout: KEY_LEASE_MS + 12_000, interval: 500 },
      );
      if (a.seenId) {
        expect(retry.status, JSON.stringify(retry.body)).toBe(201);
        expect(retry.body.id).toBe(a.seenId);
      } else {
        expect([201, 422, 503]).toContain(retry.status);
        if (retry.status === 201) a.seenId = retry.body.id as string;
      }
    }

    await eventually(async () => {
      const list = await api(apiKey, 'GET', '/reports/payments?limit=100');
      const items = list.body.items as { status: string }[];
      return items.every((i) => i.status !== 'pending' && i.status !== 'submitted');
    }, 60_000);

    for (const a of attempts.filter((x) => x.seenId)) {
      const got = await api(apiKey, 'GET', `/payments/${a.seenId}`);
      expect(got.status).toBe(200);
      expect(got.body.status).toBe('confirmed');
      expect(got.body.paidAt).toBeTruthy();
    }

    const client = new pg.Client({ connectionString: dbUrl });
    await client.connect();
    try {
      const doubled = await client.query(
        `SELECT pi.invoice_id FROM payment_invoices pi JOIN payments p ON p.id = pi.payment_id
          WHERE p.status = 'confirmed' GROUP BY pi.invoice_id HAVING count(*) > 1`,
      );
      expect(doubled.rows).toEqual([]);
      // This partner's confirmations: its webhook is the one the receiver stands behind.
      const confirmed = await client.query(`SELECT id FROM payments WHERE status = 'confirmed' AND partner_id = $1`, [partner.id]);
      await eventually(async () => {
        const ids = new Set(received.filter((r) => r.event === 'payment.confirmed').map((r) => r.id));
        return confirmed.rows.every((r: { id: string }) => ids.has(r.id));
      }, 60_000);
    } finally {
      await client.end();
    }
    expect(await booksViolations()).toEqual([]);
  }, 240_000);

  it('finishes the compensation of a refused linked payment after a kill between the ministry accept and the compensation', async () => {
    await killApi();
    await startApi(linkedSimulatorUrl);
    const partner = await admin('POST', '/admin/partners', { name: 'Chaos Linked G' });
    const other = await admin('POST', '/admin/partners', { name: 'Chaos Linked F' });
    const g = partner.apiKey as string;
    const f = other.apiKey as string;
    const idOf = async (key: string, ref: string) => (await api(key, 'GET', `/invoices/ref/${ref}`)).body.id as string;
    // G holds both B invoices: any payment that settles them too must be refused.
    for (const ref of ['CH-LB1', 'CH-LB2']) expect((await api(g, 'POST', '/payments', { invoiceId: await idOf(g, ref) })).status).toBe(201);
    const a1 = await idOf(f, 'CH-LA1');
    const a2 = await idOf(f, 'CH-LA2');

    // Kill 1: the ministry has accepted F's payment of A1, the service has not yet recorded it.
    const first = api(f, 'POST', '/payments', { invoiceId: a1 }).catch(() => null);
    await eventually(async () => (await linkedPayments()).some((p) => p.refNum === 'CH-LA1'), 10_000);
    await killApi();
    await first;
    releaseHeldSubmits();
    // The ministry has the payment; the service had recorded nothing of its answer.
    expect(await queryRows<{ status: string }>(`SELECT status FROM payments WHERE invoice_id = $1`, [a1])).toEqual([{ status: 'pending' }]);

    // Kill 2: F's payment of A2 is refused and its cancellation owed, but the ministry has not answered it.
    await startApi(linkedSimulatorUrl);
    const cancelFault = await fetch(`${linkedSimulatorUrl}/__control/faults`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ source: 'mof', mode: 'timeout', operation: 'cancel' }),
    });
    expect(cancelFault.status).toBe(200);
    const second = api(f, 'POST', '/payments', { invoiceId: a2 }).catch(() => null);
    await eventually(async () => (await queryRows(`SELECT 1 FROM ministry_cancellations c JOIN payments p ON p.id = c.payment_id WHERE p.invoice_id = $1`, [a2])).length > 0, 10_000);
    await killApi();
    await second;
    // Refused and owed, but the ministry never answered the cancellation.
    expect(await queryRows(`SELECT p.status, c.done_at FROM ministry_cancellations c JOIN payments p ON p.id = c.payment_id WHERE p.invoice_id = $1`, [a2])).toEqual([{ status: 'failed', done_at: null }]);
    expect((await linkedPayments()).find((p) => p.refNum === 'CH-LA2')?.status).toBe('submitted');
    await fetch(`${linkedSimulatorUrl}/__control/faults`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ source: 'mof', mode: 'none' }) });

    await startApi(linkedSimulatorUrl);
    const fIds = async () => (await queryRows<{ id: string; status: string }>(`SELECT id, status FROM payments WHERE invoice_id IN ($1, $2)`, [a1, a2]));
    await eventually(async () => {
      const rows = await fIds();
      const done = await queryRows(`SELECT 1 FROM ministry_cancellations WHERE done_at IS NOT NULL AND payment_id = ANY($1::uuid[])`, [rows.map((r) => r.id)]);
      return rows.length === 2 && rows.every((r) => r.status === 'failed') && done.length === 2;
    }, 60_000);
    const atMinistry = (await linkedPayments()).filter((p) => p.refNum === 'CH-LA1' || p.refNum === 'CH-LA2');
    expect(atMinistry.map((p) => p.status)).toEqual(['canceled', 'canceled']);

    // G's payments were never touched, and settle B when approved.
    for (const ref of ['CH-LB1', 'CH-LB2']) expect((await fetch(`${linkedSimulatorUrl}/__control/approve`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ refNum: ref }) })).status).toBe(200);
    await eventually(async () => {
      const list = (await api(g, 'GET', '/reports/payments?limit=100')).body.items as { status: string }[];
      return list.length === 2 && list.every((i) => i.status === 'confirmed');
    }, 30_000);
    expect(await booksViolations()).toEqual([]);
  }, 180_000);
});
