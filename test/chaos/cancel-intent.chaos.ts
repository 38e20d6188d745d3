import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { buildSimulator } from '../../simulator/simulator.app.js';
import { checkInvariants, type RunSql } from '../helpers/invariants.js';
import { createPartnerKey, serviceEnv, startApiProcess, type ApiProcess } from '../helpers/api-process.js';
import { invoiceFixture } from '../helpers/fixtures.js';
import { queryOnce } from '../helpers/pg-query.js';
import { freePorts } from '../walkthrough/walkthrough.js';
import { listenLocal } from '../helpers/listen-local.js';

/**
 * Kills the service after the ministry has canceled a payment (at the partner's request, or for
 * its expiry) and before the service has recorded it: the intent written before the ministry call
 * lets the restarted service finish the cancel here, as the cancel it was.
 */
const DATABASE_URL = process.env.DATABASE_URL;
const ADMIN_TOKEN = 'cancel-admin-token';

let dbName: string;
let dbUrl: string;
let simulator: FastifyInstance;
let simulatorUrl: string;
let releaseHeldCancel: () => void = () => undefined;
let held: Promise<void> = Promise.resolve();
let cancelReachedMinistry = false;

/** The ministry's next cancels are made at once but answered only once released. */
function holdCancels(): void {
  cancelReachedMinistry = false;
  held = new Promise<void>((resolve) => (releaseHeldCancel = resolve));
}
let api: ApiProcess | null = null;
let port = 0;
let adminPort = 0;

/**
 * `confirmPollMs` of the first process is long: its status checks must not see the ministry's
 * cancel (made before the held answer) and record it before the kill.
 */
async function startApi(confirmPollMs: number, extra: Record<string, string> = {}): Promise<void> {
  const env = serviceEnv(
    { databaseUrl: dbUrl, port, adminPort, adminToken: ADMIN_TOKEN, ministryUrl: simulatorUrl },
    { MINISTRY_TIMEOUT_MS: '1000', CONFIRM_POLL_MS: String(confirmPollMs), ...extra },
  );
  api = await startApiProcess('cancel-intent-api', env, `http://127.0.0.1:${port}/api/v1/health/ready`);
}

async function killApi(): Promise<void> {
  const proc = api?.proc;
  if (!proc || proc.exitCode !== null) return;
  const exited = new Promise((r) => proc.once('exit', r));
  proc.kill('SIGKILL');
  await exited;
}

beforeAll(async () => {
  if (!DATABASE_URL) return;
  dbName = `cancel_${Date.now()}_${process.pid}`;
  await queryOnce(DATABASE_URL, `CREATE DATABASE ${dbName}`);
  const url = new URL(DATABASE_URL);
  url.pathname = `/${dbName}`;
  dbUrl = url.toString();
  simulator = await buildSimulator({
    fixtures: { invoices: [invoiceFixture('mof', 'CI-1', { amount: 900 }), invoiceFixture('mof', 'CI-2', { amount: 700 })] },
    autoApproveMs: 0,
  });
  // The ministry cancels at once but holds its answer until released: the kill lands between
  // the ministry's cancel and the service's record of it.
  simulator.addHook('onSend', async (request, _reply, payload) => {
    if (request.method === 'POST' && /^\/mof\/api\/payments\/[^/]+\/cancel$/.test(request.url)) {
      cancelReachedMinistry = true;
      await held;
    }
    return payload;
  });
  simulatorUrl = await listenLocal(simulator);
  [port = 0, adminPort = 0] = await freePorts(2);
}, 60_000);

afterAll(async () => {
  if (!DATABASE_URL) return;
  await api?.stop();
  releaseHeldCancel();
  await simulator?.close();
  await queryOnce(DATABASE_URL, `DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`);
});

describe.skipIf(!DATABASE_URL)("partner's cancel across a crash", () => {
  it('finishes a cancel the ministry made before the service could record it', async () => {
    holdCancels();
    await startApi(600_000);
    const apiKey = await createPartnerKey(adminPort, ADMIN_TOKEN, 'Cancel Bank');
    const call = (method: string, path: string, body?: unknown) =>
      fetch(`http://127.0.0.1:${port}/api/v1${path}`, {
        method,
        headers: { 'x-api-key': apiKey, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
    const invoice = (await (await call('GET', '/invoices/ref/CI-1')).json()) as { id: string };
    const paid = await call('POST', '/payments', { invoiceId: invoice.id });
    expect(paid.status).toBe(201);
    const { id } = (await paid.json()) as { id: string };

    const cancel = call('DELETE', `/payments/${id}`).catch(() => null);
    await expect.poll(() => cancelReachedMinistry, { timeout: 10_000 }).toBe(true);
    await killApi();
    await cancel;
    releaseHeldCancel();
    const atMinistry = async () => {
      const res = await fetch(`${simulatorUrl}/__control/payments`);
      return ((await res.json()) as { payments: { paymentId: string; status: string }[] }).payments.find((p) => p.paymentId === id)?.status;
    };
    expect(await atMinistry()).toBe('canceled');
    // Canceled at the ministry, not here: only the intent says the service owes the move.
    expect(await queryOnce(dbUrl, `SELECT p.status, c.kind, c.done_at FROM payments p JOIN ministry_cancellations c ON c.payment_id = p.id WHERE p.id = $1`, [id])).toEqual([
      { status: 'submitted', kind: 'partner', done_at: null },
    ]);

    await startApi(100);
    await expect
      .poll(async () => (await queryOnce<{ status: string }>(dbUrl, `SELECT status FROM payments WHERE id = $1`, [id]))[0]?.status, { timeout: 30_000, interval: 200 })
      .toBe('canceled');
    expect(await queryOnce(dbUrl, `SELECT status FROM invoices WHERE id = $1`, [invoice.id])).toEqual([{ status: 'open' }]);
    // The status check may see the ministry's cancel first; the intent is then closed on its next try.
    await expect
      .poll(async () => (await queryOnce<{ done: boolean }>(dbUrl, `SELECT done_at IS NOT NULL AS done FROM ministry_cancellations WHERE payment_id = $1`, [id]))[0]?.done, { timeout: 30_000, interval: 200 })
      .toBe(true);
    expect(await atMinistry()).toBe('canceled');
    const read = await call('GET', `/payments/${id}`);
    expect(((await read.json()) as { status: string }).status).toBe('canceled');
    const run: RunSql = (text) => queryOnce(dbUrl, text);
    expect(await checkInvariants(run)).toEqual([]);
  }, 120_000);
});

describe.skipIf(!DATABASE_URL)("an expiry's cancel across a crash", () => {
  it('records a payment the ministry canceled for its expiry as expired, not as canceled by the ministry', async () => {
    await api?.stop();
    holdCancels();
    // Checks every 100 ms and an expiry of 1 s: the first process expires the payment itself.
    await startApi(100, { PAYMENT_EXPIRY_MS: '1000' });
    const apiKey = await createPartnerKey(adminPort, ADMIN_TOKEN, 'Expiry Bank');
    const call = (method: string, path: string, body?: unknown) =>
      fetch(`http://127.0.0.1:${port}/api/v1${path}`, {
        method,
        headers: { 'x-api-key': apiKey, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
    const invoice = (await (await call('GET', '/invoices/ref/CI-2')).json()) as { id: string };
    const paid = await call('POST', '/payments', { invoiceId: invoice.id });
    expect(paid.status).toBe(201);
    const { id } = (await paid.json()) as { id: string };

    await expect.poll(() => cancelReachedMinistry, { timeout: 20_000 }).toBe(true);
    await killApi();
    releaseHeldCancel();
    expect(await queryOnce(dbUrl, `SELECT p.status, c.kind, c.done_at FROM payments p JOIN ministry_cancellations c ON c.payment_id = p.id WHERE p.id = $1`, [id])).toEqual([
      { status: 'submitted', kind: 'expiry', done_at: null },
    ]);

    await startApi(100, { PAYMENT_EXPIRY_MS: '1000' });
    await expect
      .poll(async () => (await queryOnce<{ status: string }>(dbUrl, `SELECT status FROM payments WHERE id = $1`, [id]))[0]?.status, { timeout: 30_000, interval: 200 })
      .toBe('canceled');
    expect(await queryOnce(dbUrl, `SELECT status_event FROM payments WHERE id = $1`, [id])).toEqual([{ status_event: 'expired' }]);
    expect(await queryOnce(dbUrl, `SELECT event, payload->>'reason' AS reason FROM events WHERE payment_id = $1 AND event <> 'payment.submitted'`, [id])).toEqual([
      { event: 'payment.canceled', reason: 'expired' },
    ]);
    await expect
      .poll(async () => (await queryOnce<{ done: boolean }>(dbUrl, `SELECT done_at IS NOT NULL AS done FROM ministry_cancellations WHERE payment_id = $1`, [id]))[0]?.done, { timeout: 30_000, interval: 200 })
      .toBe(true);
    const run: RunSql = (text) => queryOnce(dbUrl, text);
    expect(await checkInvariants(run)).toEqual([]);
  }, 120_000);
});
