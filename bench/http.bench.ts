import { mkdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import autocannon, { type Request as AcRequest } from 'autocannon';
import { apiEnv, freePort, freshDatabase, startProcess, type Proc } from './bench-processes.js';

/**
 * `npm run bench`: the service on PostgreSQL and on PGlite against a bare Fastify baseline, in
 * one run on one machine. Each endpoint is driven to its peak, then at 50% of that peak for
 * latency. Results go to bench/results/latest.{md,json}.
 */
const DURATION_S = Number(process.argv.find((a) => a.startsWith('--duration='))?.slice(11) ?? 6);
const CONNECTIONS = 32;
const PARTNERS = 8;
const REGISTERS_PER_PARTNER = 2;
const INVOICES_PER_REGISTER = 1500;
const PG_URL = process.argv.find((a) => a.startsWith('--pg='))?.slice(5) ?? 'postgres://postgres@127.0.0.1:5432/test';
const ADMIN_TOKEN = 'bench-admin-token';

interface Row {
  store: string;
  endpoint: string;
  peakRps: number;
  ratio: number;
  p50: number;
  p99: number;
  rateAtHalf: number;
  errors: number;
}

function writeFixtures(): string {
  const invoices = [];
  const sources = ['mof', 'etax', 'police'] as const;
  for (let r = 0; r < PARTNERS * REGISTERS_PER_PARTNER; r++) {
    for (let i = 0; i < INVOICES_PER_REGISTER; i++) {
      invoices.push({
        source: sources[i % 3],
        refNum: `B${r}-${i}`,
        description: 'Bench invoice',
        amount: 1000 + (i % 500),
        status: 'open',
        dueDate: '2099-01-01T00:00:00.000Z',
        issuedAt: '2025-01-01T00:00:00.000Z',
        payer: { register: `BR${r}`, name: 'Bench Payer' },
        payee: { id: 'ORG-1', name: 'Сангийн яам' },
      });
    }
  }
  for (const source of sources) {
    invoices.push({ source, refNum: `SMALL-${source}`, description: 'Small', amount: 5000, status: 'open', dueDate: null, issuedAt: null, payer: { register: 'SMALL1', name: 'Small' }, payee: { id: 'ORG-1', name: 'Org' } });
  }
  const path = join(tmpdir(), `bench-fixtures-${process.pid}.json`);
  writeFileSync(path, JSON.stringify({ invoices }));
  return path;
}

async function run(opts: autocannon.Options): Promise<autocannon.Result> {
  return new Promise((resolve, reject) => {
    autocannon(opts, (err, result) => (err ? reject(err) : resolve(result)));
  });
}

interface Target {
  name: string;
  method: 'GET' | 'POST';
  next: () => { path: string; key: string; body?: string };
}

async function measure(baseUrl: string, target: Target): Promise<{ peak: number; p50: number; p99: number; rate: number; errors: number }> {
  const setupRequest = (req: AcRequest) => {
    const n = target.next();
    return { ...req, method: target.method, path: n.path, headers: { 'x-api-key': n.key, 'content-type': 'application/json' }, body: n.body };
  };
  const peak = await run({ url: baseUrl, connections: CONNECTIONS, duration: DURATION_S, requests: [{ setupRequest }] });
  const rate = Math.max(1, Math.floor(peak.requests.average * 0.5));
  const half = await run({ url: baseUrl, connections: CONNECTIONS, duration: DURATION_S, overallRate: rate, requests: [{ setupRequest }] });
  return {
    peak: Math.round(peak.requests.average),
    p50: half.latency.p50,
    p99: half.latency.p99,
    rate,
    errors: peak.non2xx + peak.errors + half.non2xx + half.errors,
  };
}

async function json(url: string, init: RequestInit = {}) {
  const res = await fetch(url, init);
  return (await res.json()) as Record<string, unknown>;
}

async function prepare(api: string, adminUrl: string) {
  const keys: string[] = [];
  const owned: { key: string; id: string }[][] = [];
  for (let p = 0; p < PARTNERS; p++) {
    const partner = await json(`${adminUrl}/admin/partners`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: `Bench ${p}` }),
    });
    const key = partner.apiKey as string;
    keys.push(key);
    const mine: { key: string; id: string }[] = [];
    for (let r = 0; r < REGISTERS_PER_PARTNER; r++) {
      const found = await json(`${api}/invoices?ttd=BR${p * REGISTERS_PER_PARTNER + r}`, { headers: { 'x-api-key': key } });
      for (const inv of found.invoices as { id: string }[]) mine.push({ key, id: inv.id });
    }
    await json(`${api}/invoices?ttd=SMALL1`, { headers: { 'x-api-key': key } });
    owned.push(mine);
  }
  return { keys, owned };
}

async function benchStore(store: string, simUrl: string, baselinePeak: number, databaseUrl: string | null): Promise<{ rows: Row[]; rssMb: number }> {
  const [port, adminPort] = [await freePort(), await freePort()];
  const env = apiEnv({
    port,
    adminPort,
    adminToken: ADMIN_TOKEN,
    simulatorUrl: simUrl,
    databaseUrl,
    extra: { RATE_LIMIT_PER_SECOND: '1000000', RATE_LIMIT_PER_MINUTE: '10000000', RATE_LIMIT_PER_HOUR: '100000000', CONFIRM_POLL_MS: '60000' },
  });
  const api = `http://127.0.0.1:${port}/api/v1`;
  const proc = await startProcess(['src/bin/api.ts'], env, `${api}/health/ready`);
  try {
    const { owned } = await prepare(api, `http://127.0.0.1:${adminPort}`);
    const all = owned.flat();
    let i = 0;
    const cursor = { pay: 0 };
    const paid: { key: string; id: string }[] = [];
    const rows: Row[] = [];
    const record = (endpoint: string, m: Awaited<ReturnType<typeof measure>>) => {
      rows.push({ store, endpoint, peakRps: m.peak, ratio: m.peak / baselinePeak, p50: m.p50, p99: m.p99, rateAtHalf: m.rate, errors: m.errors });
      console.log(`${store.padEnd(9)} ${endpoint.padEnd(24)} peak ${m.peak}/s  p50 ${m.p50} ms  p99 ${m.p99} ms @ ${m.rate}/s  non-2xx ${m.errors}`);
    };
    record('GET /invoices/{id}', await measure(api, { name: 'read', method: 'GET', next: () => { const o = all[i++ % all.length] as { key: string; id: string }; return { path: `/api/v1/invoices/${o.id}`, key: o.key }; } }));
    record('GET /invoices?ttd=', await measure(api, { name: 'search', method: 'GET', next: () => ({ path: '/api/v1/invoices?ttd=SMALL1', key: (all[i++ % all.length] as { key: string }).key }) }));
    record('POST /payments', await measure(api, {
      name: 'pay',
      method: 'POST',
      next: () => {
        const o = all[cursor.pay++ % all.length] as { key: string; id: string };
        paid.push(o);
        return { path: '/api/v1/payments', key: o.key, body: JSON.stringify({ invoiceId: o.id }) };
      },
    }));
    const payments = await collectPayments(api, owned.map((o) => o[0]?.key as string));
    record('GET /payments/{id}', await measure(api, { name: 'status', method: 'GET', next: () => { const p = payments[i++ % payments.length] as { key: string; id: string }; return { path: `/api/v1/payments/${p.id}`, key: p.key }; } }));
    return { rows, rssMb: proc.peakRssMb() };
  } finally {
    await proc.stop();
  }
}

async function collectPayments(api: string, keys: string[]): Promise<{ key: string; id: string }[]> {
  const out: { key: string; id: string }[] = [];
  for (const key of keys) {
    const list = await json(`${api}/reports/payments?limit=100`, { headers: { 'x-api-key': key } });
    for (const item of list.items as { id: string }[]) out.push({ key, id: item.id });
  }
  return out;
}

async function withSimulator<T>(fixtures: string, fn: (url: string) => Promise<T>): Promise<T> {
  const port = await freePort();
  const sim: Proc = await startProcess(['simulator/bin/simulator.ts'], { SIMULATOR_PORT: String(port), SIMULATOR_FIXTURES: fixtures, SIMULATOR_AUTO_APPROVE_MS: '0' }, `http://127.0.0.1:${port}/mof/api/invoices/NOPE`);
  try {
    return await fn(`http://127.0.0.1:${port}`);
  } finally {
    await sim.stop();
  }
}

function table(baseline: number, rows: Row[], rss: Record<string, number>): string {
  const lines = [
    `| store | endpoint | peak req/s | vs baseline | p50 ms @50% | p99 ms @50% | non-2xx |`,
    `|---|---|---|---|---|---|---|`,
    `| - | bare Fastify hello JSON | ${baseline} | 100% | | | |`,
    ...rows.map((r) => `| ${r.store} | ${r.endpoint} | ${r.peakRps} | ${(r.ratio * 100).toFixed(1)}% | ${r.p50} | ${r.p99} | ${r.errors} |`),
    '',
    ...Object.entries(rss).map(([store, mb]) => `Peak RSS of the API on ${store}: ${mb} MB`),
  ];
  return lines.join('\n');
}

async function main(): Promise<void> {
  const started = Date.now();
  const basePort = await freePort();
  const baseline = await startProcess(['bench/baseline-server.ts', String(basePort)], {}, `http://127.0.0.1:${basePort}/hello`);
  let baselinePeak: number;
  try {
    const r = await run({ url: `http://127.0.0.1:${basePort}/hello`, connections: CONNECTIONS, duration: DURATION_S });
    baselinePeak = Math.round(r.requests.average);
    console.log(`baseline  bare Fastify hello JSON   peak ${baselinePeak}/s`);
  } finally {
    await baseline.stop();
  }
  const fixtures = writeFixtures();
  const rows: Row[] = [];
  const rss: Record<string, number> = {};
  const pgDb = await freshDatabase(PG_URL, 'bench');
  if (pgDb) {
    try {
      const res = await withSimulator(fixtures, (sim) => benchStore('postgres', sim, baselinePeak, pgDb.url));
      rows.push(...res.rows);
      rss.postgres = res.rssMb;
    } finally {
      await pgDb.drop();
    }
  }
  const lite = await withSimulator(fixtures, (sim) => benchStore('pglite', sim, baselinePeak, null));
  rows.push(...lite.rows);
  rss.pglite = lite.rssMb;

  const md = table(baselinePeak, rows, rss);
  mkdirSync('bench/results', { recursive: true });
  writeFileSync('bench/results/latest.md', `${md}\n`);
  writeFileSync('bench/results/latest.json', JSON.stringify({ date: new Date().toISOString(), node: process.version, durationS: DURATION_S, connections: CONNECTIONS, baselinePeak, rows, rssMb: rss }, null, 2));
  console.log(`\n${md}\n\nbench took ${Math.round((Date.now() - started) / 1000)} s`);
}

await main();
