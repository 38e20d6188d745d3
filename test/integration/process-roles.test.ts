import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { buildSimulator } from '../../simulator/simulator.app.js';
import { testConfig } from '../helpers/test-config.js';
import { serviceEnv, startApiProcess, type ApiProcess } from '../helpers/api-process.js';
import { invoiceFixture } from '../helpers/fixtures.js';
import { queryOnce } from '../helpers/pg-query.js';
import { startReceiver, type WebhookReceiver } from '../helpers/webhook-receiver.js';
import { freePorts } from '../walkthrough/walkthrough.js';
import { listenLocal } from '../helpers/listen-local.js';
import type { CallReport } from '../../simulator/call-tracker.js';

/*
 * PROCESS_ROLE=api serves the listeners and runs no background work; PROCESS_ROLE=worker runs the
 * background work and answers only health and metrics. Real processes on one PostgreSQL database.
 */
const { databaseUrl } = testConfig();

/** The sum of the samples of `metric` in a Prometheus exposition whose labels include `labels`. */
function samples(exposition: string, metric: string, labels: Record<string, string> = {}): number {
  let sum = 0;
  for (const line of exposition.split('\n')) {
    const match = /^([a-z_]+)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match || match[1] !== metric) continue;
    const has = Object.fromEntries([...(match[2] ?? '').matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1], m[2]]));
    if (Object.entries(labels).every(([k, v]) => has[k] === v)) sum += Number(match[3]);
  }
  return sum;
}
const ADMIN_TOKEN = 'roles-admin-token';

describe.skipIf(!databaseUrl)('process roles', { tags: ['postgres'] }, () => {
  const dbName = `roles_${Date.now()}_${process.pid}`;
  let dbUrl: string;
  let simulator: FastifyInstance;
  let simulatorUrl: string;
  let receiver: WebhookReceiver;
  const started: ApiProcess[] = [];

  const onServer = (text: string) => queryOnce(databaseUrl as string, text);
  const onDb = <T extends pg.QueryResultRow>(text: string, params: unknown[] = []) => queryOnce<T>(dbUrl, text, params);

  const env = (role: string, port: number, adminPort: number) =>
    serviceEnv({ databaseUrl: dbUrl, port, adminPort, adminToken: ADMIN_TOKEN, ministryUrl: simulatorUrl }, { PROCESS_ROLE: role });

  beforeAll(async () => {
    await onServer(`CREATE DATABASE ${dbName}`);
    const url = new URL(databaseUrl as string);
    url.pathname = `/${dbName}`;
    dbUrl = url.toString();
    simulator = await buildSimulator({
      fixtures: { invoices: [invoiceFixture('mof', 'ROLE-1', { amount: 1500 })] },
      autoApproveMs: 0,
    });
    simulatorUrl = await listenLocal(simulator);
    receiver = await startReceiver();
  }, 60_000);

  afterAll(async () => {
    await Promise.all(started.map((p) => p.stop()));
    await simulator?.close();
    await receiver?.close();
    await onServer(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`);
  });

  it('an api process leaves background work to a worker, which serves only health and metrics', async () => {
    const [apiPort = 0, apiAdmin = 0, workerPort = 0, workerAdmin = 0] = await freePorts(4);
    started.push(await startApiProcess('role-api', env('api', apiPort, apiAdmin), `http://127.0.0.1:${apiPort}/api/v1/health/ready`));
    const api = (key: string, method: string, path: string, body?: unknown) =>
      fetch(`http://127.0.0.1:${apiPort}/api/v1${path}`, {
        method,
        headers: { 'x-api-key': key, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        body: body === undefined ? undefined : JSON.stringify(body),
      });

    const partner = await fetch(`http://127.0.0.1:${apiAdmin}/admin/partners`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'Roles Bank' }),
    });
    expect(partner.status).toBe(201);
    const { apiKey } = (await partner.json()) as { apiKey: string };
    expect((await api(apiKey, 'POST', '/webhooks', { url: receiver.url, secret: 'roles-secret-0123456789', events: ['payment.submitted', 'payment.confirmed'] })).status).toBe(201);
    const invoice = (await (await api(apiKey, 'GET', '/invoices/ref/ROLE-1')).json()) as { id: string };
    const paid = await api(apiKey, 'POST', '/payments', { invoiceId: invoice.id });
    expect(paid.status).toBe(201);
    const { id } = (await paid.json()) as { id: string };
    const approved = await fetch(`${simulatorUrl}/__control/approve`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ refNum: 'ROLE-1' }) });
    expect(approved.status).toBe(200);

    // The payment.submitted delivery is due from now on, and the check of the approved payment
    // soon after: the api process, up since before the worker, would make both first, were it
    // running background work. The worker makes them, and the api process has made none.
    started.push(await startApiProcess('role-worker', env('worker', workerPort, workerAdmin), `http://127.0.0.1:${workerAdmin}/health/ready`));
    await expect.poll(async () => (await onDb<{ status: string }>(`SELECT status FROM payments WHERE id = $1`, [id]))[0]?.status, { timeout: 15_000 }).toBe('confirmed');
    await expect
      .poll(() => receiver.received.map((r) => (JSON.parse(r.body) as { event: string }).event).sort(), { timeout: 15_000 })
      .toEqual(['payment.confirmed', 'payment.submitted']);
    const metricsOf = async (port: number) => (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    const [apiSays, workerSays] = [await metricsOf(apiAdmin), await metricsOf(workerAdmin)];
    const statusChecks = { source: 'mof', operation: 'getPayment' };
    const { calls } = (await simulator.inject({ method: 'GET', url: '/__control/calls?source=mof&operation=status' })).json<CallReport>();
    expect(calls).toBeGreaterThan(0);
    expect(samples(workerSays, 'ministry_call_duration_seconds_count', statusChecks)).toBe(calls);
    expect(samples(apiSays, 'ministry_call_duration_seconds_count', statusChecks)).toBe(0);
    expect(samples(workerSays, 'webhook_deliveries_total')).toBe(receiver.received.length);
    expect(samples(apiSays, 'webhook_deliveries_total')).toBe(0);
    // The api process made the calls its requests needed.
    expect(samples(apiSays, 'ministry_call_duration_seconds_count', { source: 'mof', operation: 'submitPayment' })).toBe(1);

    const worker = `http://127.0.0.1:${workerAdmin}`;
    expect((await fetch(`${worker}/health/live`)).status).toBe(200);
    const metrics = await fetch(`${worker}/metrics`);
    expect(metrics.status).toBe(200);
    expect(await metrics.text()).toMatch(/^database_up 1$/m);
    expect((await fetch(`${worker}/admin/partners`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).status).toBe(404);
    expect((await fetch(`${worker}/`)).status).toBe(404);
    // No partner listener at all.
    await expect(fetch(`http://127.0.0.1:${workerPort}/api/v1/health/live`)).rejects.toThrow();
  }, 90_000);
});
