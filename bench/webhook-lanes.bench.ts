/**
 * `npm run bench:lanes`: how soon a healthy partner's `payment.submitted` arrives while five other
 * partners' webhooks hang. Each hanging partner has as many webhooks as it may (10), all at one
 * receiver that accepts the request and never answers, and a backlog of deliveries at each. The
 * healthy partner pays one invoice every 150 ms; its receiver answers 200 at once and records
 * when each payment's `payment.submitted` arrives. The bench prints the POST /payments answer ->
 * arrival latency and exits non-zero when its p99 reaches 3 s (the lanes' criterion) or a delivery
 * never arrives. The functional half (the healthy partner's deliveries go through while the others
 * hang) is test/integration/webhook-lanes.test.ts; how soon is measured here.
 *
 * The simulator and one service process (`PROCESS_ROLE=all`, from source through tsx with
 * `start:prod`'s Node flags) with every webhook setting at its documented default; PGlite on disk
 * unless `--pg=URL` names a PostgreSQL server (a scratch database is created and dropped).
 * `--payments=N` (60), `--every=MS` (150), `--hanging=N` (5 partners), `--backlog=N` (6).
 */
import { writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { apiEnv, createPartner, fetchJson as json, freePort, freshDatabase, hookReceiver, percentile, startProcess, UNLIMITED_RATES, type Proc, START_PROD_NODE_FLAGS, jsonPost, benchFlag } from './bench-processes.js';

const PG_URL = benchFlag('pg');
const PAYMENTS = Number(benchFlag('payments') ?? 60);
const PAY_EVERY_MS = Number(benchFlag('every') ?? 150);
const HANGING_PARTNERS = Number(benchFlag('hanging') ?? 5);
/** Deliveries due to each hanging webhook from the start: enough to keep it hanging for the whole run. */
const HANGING_BACKLOG = Number(benchFlag('backlog') ?? 6);
/** WEBHOOK_MAX_PER_PARTNER's default: each hanging partner has every webhook it may. */
const WEBHOOKS_PER_PARTNER = 10;
const BUDGET_MS = 3000;
const ADMIN_TOKEN = 'bench-lanes-admin-token';
const SECRET = 'lanes-bench-secret-0123456';
const API_ENTRY = 'src/bin/api.ts';
const SIMULATOR_ENTRY = 'simulator/bin/simulator.ts';

/** A receiver that reads each request and never answers it; it counts them. */
async function hangingReceiver(): Promise<{ url: string; requests: () => number; close: () => Promise<void> }> {
  let requests = 0;
  const held: ServerResponse[] = [];
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    req.resume();
    req.on('end', () => {
      requests++;
      held.push(res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    requests: () => requests,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** `count` open invoices of one payer at the simulator, found (and so made payable) by the partner's search. */
async function invoicesOf(api: string, simUrl: string, key: string, payer: string, count: number): Promise<string[]> {
  const invoices = Array.from({ length: count }, (_, i) => ({
    source: 'mof',
    refNum: `LB-${payer}-${i}`,
    description: 'Lanes bench invoice',
    amount: 1000 + i,
    status: 'open',
    dueDate: '2099-01-01T00:00:00.000Z',
    issuedAt: '2026-01-01T00:00:00.000Z',
    payer: { register: payer, name: 'Lanes Payer' },
    payee: { id: 'ORG-1', name: 'Org' },
  }));
  await json(`${simUrl}/__control/invoices`, jsonPost({ invoices }));
  const found = await json(`${api}/invoices?ttd=${payer}`, { headers: { 'x-api-key': key } });
  return (found.invoices as { id: string }[]).map((i) => i.id);
}

async function pay(api: string, key: string, invoiceId: string): Promise<string> {
  return (await json(`${api}/payments`, jsonPost({ invoiceId }, key))).id as string;
}

/** Polls (gently: the bench shares the machine with what it measures) until `done` or the deadline. */
async function waitFor(done: () => boolean, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline && !done()) await sleep(100);
  return done();
}

async function main(): Promise<number> {
  const db = PG_URL ? await freshDatabase(PG_URL, 'bench_lanes') : null;
  if (PG_URL && !db) return 2;
  const healthyHook = await hookReceiver((b) => (b.event === 'payment.submitted' && b.data.id ? b.data.id : null));
  const hanging = await Promise.all(Array.from({ length: HANGING_PARTNERS }, hangingReceiver));
  const fixtures = join(tmpdir(), `lanes-fixtures-${process.pid}.json`);
  writeFileSync(fixtures, JSON.stringify({ invoices: [] }));
  const simPort = await freePort();
  const simUrl = `http://127.0.0.1:${simPort}`;
  const procs: Proc[] = [];
  const load0 = loadavg();
  try {
    procs.push(await startProcess([SIMULATOR_ENTRY], { SIMULATOR_PORT: String(simPort), SIMULATOR_FIXTURES: fixtures, SIMULATOR_AUTO_APPROVE_MS: '0', LOG_LEVEL: 'warn' }, `${simUrl}/mof/api/invoices/NOPE`));
    const [port, adminPort] = [await freePort(), await freePort()];
    const env = apiEnv({ port, adminPort, adminToken: ADMIN_TOKEN, simulatorUrl: simUrl, databaseUrl: db?.url ?? null, extra: { PROCESS_ROLE: 'all', ...UNLIMITED_RATES } });
    procs.push(await startProcess([API_ENTRY], env, `http://127.0.0.1:${port}/api/v1/health/ready`, START_PROD_NODE_FLAGS));
    const api = `http://127.0.0.1:${port}/api/v1`;
    const adminUrl = `http://127.0.0.1:${adminPort}`;

    // The hanging partners' webhooks are new: none has failed yet when the healthy partner starts paying.
    for (const [p, host] of hanging.entries()) {
      const partner = await createPartner(adminUrl, ADMIN_TOKEN, `Hanging ${p}`);
      for (let i = 0; i < WEBHOOKS_PER_PARTNER; i++) await json(`${api}/webhooks`, jsonPost({ url: `${host.url}?n=${i}`, secret: SECRET, events: ['payment.submitted'] }, partner.apiKey));
      for (const invoice of await invoicesOf(api, simUrl, partner.apiKey, `LBH${p}`, HANGING_BACKLOG)) await pay(api, partner.apiKey, invoice);
    }
    const healthy = await createPartner(adminUrl, ADMIN_TOKEN, 'Healthy');
    await json(`${api}/webhooks`, jsonPost({ url: healthyHook.url, secret: SECRET, events: ['payment.submitted'] }, healthy.apiKey));
    const invoices = await invoicesOf(api, simUrl, healthy.apiKey, 'LBOK', PAYMENTS);

    const paidAt = new Map<string, number>();
    for (const invoice of invoices) {
      const id = await pay(api, healthy.apiKey, invoice);
      paidAt.set(id, Date.now());
      await sleep(PAY_EVERY_MS);
    }
    const allArrived = await waitFor(() => [...paidAt.keys()].every((id) => healthyHook.arrivals.has(id)), 60_000);
    const load1 = loadavg();

    const late = [...paidAt].flatMap(([id, at]) => (healthyHook.arrivals.has(id) ? [(healthyHook.arrivals.get(id) as number) - at] : [])).sort((a, b) => a - b);
    const missing = paidAt.size - late.length;
    const p99 = percentile(late, 0.99);
    console.log(`healthy partner: ${PAYMENTS} payments, one every ${PAY_EVERY_MS} ms; POST /payments answer -> payment.submitted at its receiver, ms:`);
    console.log('');
    console.log('| payments | p50 | p95 | p99 | max | missing |');
    console.log('|---|---|---|---|---|---|');
    console.log(`| ${paidAt.size} | ${percentile(late, 0.5)} | ${percentile(late, 0.95)} | ${p99} | ${late[late.length - 1] ?? NaN} | ${missing} |`);
    console.log('');
    console.log(`hanging: ${HANGING_PARTNERS} partners x ${WEBHOOKS_PER_PARTNER} webhooks, ${HANGING_BACKLOG} deliveries due at each; requests their receivers held: ${hanging.map((h) => h.requests()).join(', ')}`);
    console.log(`database: ${db ? 'PostgreSQL' : 'PGlite on disk'}; load average (1/5/15 min): ${load0.map((l) => l.toFixed(2)).join(' / ')} at the start, ${load1.map((l) => l.toFixed(2)).join(' / ')} at the end`);
    const ok = allArrived && missing === 0 && p99 < BUDGET_MS && hanging.every((h) => h.requests() > 0);
    console.log(ok ? `PASS: p99 ${p99} ms < ${BUDGET_MS} ms` : `FAIL: p99 ${p99} ms (budget ${BUDGET_MS} ms), ${missing} missing, hanging receivers tried: ${hanging.map((h) => h.requests() > 0).join(', ')}`);
    return ok ? 0 : 1;
  } finally {
    // The hanging receivers go first: closing them ends the attempts the service's shutdown waits for.
    await Promise.all(hanging.map((h) => h.close()));
    for (const p of procs.reverse()) await p.stop();
    healthyHook.server.close();
    await db?.drop();
  }
}

process.exitCode = await main();
