import { existsSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { createPartnerKey, serviceEnv, startApiProcess, type ApiProcess } from '../helpers/api-process.js';
import { buildSimulator } from '../../simulator/simulator.app.js';
import type { StatusOverlap } from '../../simulator/status-calls.js';
import { checkInvariants, type RunSql } from '../helpers/invariants.js';
import { invoiceFixture } from '../helpers/fixtures.js';
import { queryOnce } from '../helpers/pg-query.js';
import { startReceiver, type WebhookReceiver } from '../helpers/webhook-receiver.js';
import { freePorts } from '../walkthrough/walkthrough.js';
import { listenLocal } from '../helpers/listen-local.js';

/**
 * Two instances on one database, one of them under libfaketime a minute ahead. They compare
 * leases and due times on the database's clock, so neither takes over work the other holds: no
 * webhook delivery is attempted while another attempt of it is in flight (the receiver takes 4 s
 * to answer), and no payment's status is asked of its ministry while another ask is unanswered,
 * whether the job or a partner's read on either instance asks.
 */
const DATABASE_URL = process.env.DATABASE_URL;
const LIBFAKETIME = '/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1';
const SKEW_S = 60;
const PAYMENTS = 20;
const ADMIN_TOKEN = 'skew-admin-token';
const RECEIVER_DELAY_MS = 4000;
/** A status call takes a while, so two asks about one payment would be seen together. */
const STATUS_DELAY_MS = 1500;
/** Bounds a hang only. */
const HANG_MS = 120_000;

interface Instance extends ApiProcess {
  name: string;
  port: number;
  adminPort: number;
}

let dbName = '';
let dbUrl = '';
let simulator: FastifyInstance;
let simulatorUrl = '';
let receiver: WebhookReceiver;
const instances: Instance[] = [];

const canRun = () => DATABASE_URL !== undefined && existsSync(LIBFAKETIME);

async function startInstance(name: string, extra: Record<string, string>): Promise<Instance> {
  const [port = 0, adminPort = 0] = await freePorts(2);
  const env = serviceEnv(
    { databaseUrl: dbUrl, port, adminPort, adminToken: ADMIN_TOKEN, ministryUrl: simulatorUrl },
    { WEBHOOK_TIMEOUT_MS: '6000', LOG_LEVEL: 'info', ...extra },
  );
  const started = await startApiProcess(`skewed-clocks-${name}`, env, `http://127.0.0.1:${port}/api/v1/health/ready`);
  return { name, port, adminPort, ...started };
}

async function call(instance: Instance, key: string, method: string, path: string, body?: unknown, headers: Record<string, string> = {}) {
  const res = await fetch(`http://127.0.0.1:${instance.port}/api/v1${path}`, {
    method,
    headers: { 'x-api-key': key, ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(30_000),
  });
  const text = await res.text();
  return { status: res.status, date: res.headers.get('date'), body: text ? (JSON.parse(text) as Record<string, unknown>) : {} };
}

async function statusCalls(): Promise<{ calls: number; overlaps: StatusOverlap[] }> {
  return (await fetch(`${simulatorUrl}/__control/status-calls`)).json() as Promise<{ calls: number; overlaps: StatusOverlap[] }>;
}

async function until(attempt: () => Promise<boolean> | boolean, hangMs = HANG_MS, intervalMs = 250): Promise<boolean> {
  const giveUp = Date.now() + hangMs;
  while (Date.now() < giveUp) {
    if (await attempt()) return true;
    await sleep(intervalMs);
  }
  return false;
}

beforeAll(async () => {
  if (!canRun()) return;
  dbName = `skew_${Date.now()}_${process.pid}`;
  await queryOnce(DATABASE_URL as string, `CREATE DATABASE ${dbName}`);
  const url = new URL(DATABASE_URL as string);
  url.pathname = `/${dbName}`;
  dbUrl = url.toString();
  // Each payment waits a few seconds for its approval, so it is checked several times meanwhile.
  simulator = await buildSimulator({
    fixtures: { invoices: Array.from({ length: PAYMENTS }, (_, i) => invoiceFixture((['mof', 'etax', 'police'] as const)[i % 3] ?? 'mof', `SK-${i}`, { amount: 4000 + i, payer: { register: '9900997', name: 'Skew' } })) },
    autoApproveMs: 6000,
  });
  simulatorUrl = await listenLocal(simulator);
  for (const source of ['mof', 'etax', 'police']) {
    const res = await fetch(`${simulatorUrl}/__control/faults`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ source, mode: 'slow', delayMs: STATUS_DELAY_MS, operation: 'status' }) });
    if (res.status !== 200) throw new Error(`simulator refused the slow status fault: ${res.status}`);
  }
  receiver = await startReceiver([], { delayMs: RECEIVER_DELAY_MS });
  // One after the other: the first migrates, the second finds the schema in place.
  instances.push(await startInstance('on-time', {}));
  instances.push(await startInstance('ahead', { LD_PRELOAD: LIBFAKETIME, FAKETIME: `+${SKEW_S}s` }));
}, 120_000);

afterAll(async () => {
  if (!canRun()) return;
  await Promise.all(instances.map((i) => i.stop()));
  await simulator?.close();
  await receiver?.close();
  await queryOnce(DATABASE_URL as string, `DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`);
}, 60_000);

describe.skipIf(!canRun())('two instances on clocks a minute apart (libfaketime)', () => {
  it('never attempts a webhook delivery or asks a payment status while another attempt or ask of it is in flight', async () => {
    const [onTime, ahead] = instances as [Instance, Instance];
    const apiKey = await createPartnerKey(onTime.adminPort, ADMIN_TOKEN, 'Skew Bank');
    expect((await call(onTime, apiKey, 'POST', '/webhooks', { url: receiver.url, secret: 'skew-secret-0123456789', events: ['payment.confirmed'] })).status).toBe(201);

    // The skew is real: the instance's own clock (its HTTP Date header) runs a minute ahead.
    const search = await call(ahead, apiKey, 'GET', '/invoices?ttd=9900997');
    const onTimeDate = (await call(onTime, apiKey, 'GET', '/invoices?ttd=9900997')).date;
    const skewMs = Date.parse(search.date ?? '') - Date.parse(onTimeDate ?? '');
    expect(skewMs, `Date headers: ahead ${search.date}, on time ${onTimeDate}`).toBeGreaterThanOrEqual((SKEW_S - 5) * 1000);

    const invoiceIds = (search.body.invoices as { id: string }[]).map((i) => i.id);
    expect(invoiceIds).toHaveLength(PAYMENTS);
    const paymentIds: string[] = [];
    for (const [n, invoiceId] of invoiceIds.entries()) {
      const res = await call(n % 2 === 0 ? onTime : ahead, apiKey, 'POST', '/payments', { invoiceId }, { 'x-idempotency-key': `skew-${n}` });
      expect(res.status, JSON.stringify(res.body)).toBe(201);
      paymentIds.push(res.body.id as string);
    }

    // The partner reads its payments on both instances meanwhile: a read asks the ministry under the
    // same status-check lease as the job, so it is watched for overlaps too.
    let reading = true;
    let reads = 0;
    const reader = (async () => {
      for (let round = 0; reading; round++) {
        await Promise.all(
          paymentIds.map(async (id, n) => {
            const res = await call((n + round) % 2 === 0 ? onTime : ahead, apiKey, 'GET', `/payments/${id}`);
            expect(res.status, JSON.stringify(res.body)).toBe(200);
            reads++;
          }),
        );
        await sleep(300);
      }
    })();
    const delivered = () => new Set(receiver.received.map((r) => r.headers['webhook-id']));
    const confirmedEvents = () =>
      new Set(
        receiver.received
          .map((r) => JSON.parse(r.body) as { event: string; data: { id: string } })
          .filter((m) => m.event === 'payment.confirmed')
          .map((m) => m.data.id),
      );
    const allDelivered = await until(() => paymentIds.every((id) => confirmedEvents().has(id)));
    reading = false;
    await reader;
    expect(reads).toBeGreaterThanOrEqual(PAYMENTS * 2);
    expect(allDelivered, `payments without payment.confirmed delivered: ${JSON.stringify(paymentIds.filter((id) => !confirmedEvents().has(id)))}`).toBe(true);
    // Any further attempt in flight is answered before the overlaps are read.
    await sleep(RECEIVER_DELAY_MS + 1000);

    for (const instance of instances) expect(instance.proc.exitCode, `${instance.name} exited; see ${instance.logFile}`).toBeNull();
    expect(delivered().size).toBeGreaterThanOrEqual(PAYMENTS);
    expect(receiver.overlapping, 'deliveries attempted while another attempt of the same event was in flight').toEqual([]);
    const calls = await statusCalls();
    // Each payment was checked while it waited for its approval, so an overlap had its chance.
    expect(calls.calls, 'status calls to the ministries').toBeGreaterThanOrEqual(PAYMENTS * 2);
    expect(calls.overlaps, 'status calls made while another for the same payment was unanswered').toEqual([]);

    const run: RunSql = (text) => queryOnce<Record<string, unknown>>(dbUrl, text);
    expect(await checkInvariants(run)).toEqual([]);
    console.info('skewed clocks', { skewMs, reads, statusCalls: calls.calls, deliveries: receiver.received.length, events: delivered().size });
  }, 240_000);
});
