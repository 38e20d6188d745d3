/**
 * `npm run bench:scale`: every partner endpoint and the admin reports, one request after another,
 * over a year of data at three volumes (10k invoices / 3k payments, 1M / 300k, 5M / 1.5M by
 * default) in PostgreSQL, with the service run as `npm run start:prod` runs it (production build,
 * its heap cap). Prints and writes bench/results/scale.{md,json} (the table with a ratio column,
 * peak RSS, table sizes before and after the retention sweep) and bench/results/scale-plans-*.md
 * (EXPLAIN ANALYZE of the report and claim queries). See bench/README.md, "A year of data".
 */
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { writeFileSync, mkdirSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import pg from 'pg';
import { apiEnv, createPartner, freePort, freshDatabase, percentile, startProcess, type Proc, START_PROD_NODE_FLAGS } from './bench-processes.js';
import { seedStatements } from './scale-seed.js';
import { explainAll } from './scale-plans.js';
import { sweepToSteadyState, tableSizes, type TableSize } from './scale-retention.js';

const flag = (name: string) => process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
const PG_URL = flag('pg') ?? 'postgres://postgres@127.0.0.1:5432/test';
const VOLUMES = (flag('volumes') ?? '10000:3000,1000000:300000,5000000:1500000').split(',').map((v) => {
  const [invoices, payments] = v.split(':').map(Number);
  return { invoices: invoices ?? 0, payments: payments ?? 0 };
});
const RUNS = Number(flag('runs') ?? 50);
const WARMUP = Number(flag('warmup') ?? 10);
const KEEP = process.argv.includes('--keep');
const ADMIN_TOKEN = 'bench-scale-admin-token';
const BENCH_REGISTER = 'SCALEBENCH';
/** Invoices the simulator holds for the live part: searched, paid (POST), canceled (DELETE). */
const LIVE_INVOICES = 3 * (RUNS + WARMUP);
const OTHER_PARTNERS = 40;

interface Sample {
  endpoint: string;
  p50: number;
  p99: number;
  /** The last answer's status (every timed answer is below 400). */
  status: number;
  /** The last answer's size: the answers must be alike at every volume for the times to compare. */
  bytes: number;
}

interface VolumeResult {
  invoices: number;
  payments: number;
  seedS: number;
  samples: Sample[];
  peakRssMb: number;
  sizesYear: TableSize[];
  sizesSteady: TableSize[];
  sweep: { seconds: number; deleted: Record<string, number> };
}

function writeFixtures(): string {
  const sources = ['mof', 'etax', 'police'] as const;
  const invoices = Array.from({ length: LIVE_INVOICES }, (_, i) => ({
    source: sources[i % 3],
    refNum: `LIVE-${i}`,
    description: 'Scale bench invoice',
    amount: 1000 + i,
    status: 'open',
    dueDate: '2099-01-01T00:00:00.000Z',
    issuedAt: '2026-01-01T00:00:00.000Z',
    payer: { register: BENCH_REGISTER, name: 'Bench Payer' },
    payee: { id: 'ORG-1', name: 'Org' },
  }));
  const path = join(tmpdir(), `scale-fixtures-${process.pid}.json`);
  writeFileSync(path, JSON.stringify({ invoices }));
  return path;
}

async function call(url: string, init: RequestInit = {}): Promise<{ status: number; body: unknown }> {
  const res = await fetch(url, init);
  const text = await res.text();
  return { status: res.status, body: text ? (JSON.parse(text) as unknown) : null };
}

/** WARMUP untimed calls, then RUNS timed ones, one after another; `i` numbers the call. */
async function timeEndpoint(endpoint: string, request: (i: number) => Promise<{ status: number; body: unknown }>): Promise<Sample> {
  for (let i = 0; i < WARMUP; i++) await request(i);
  const ms: number[] = [];
  let status = 0;
  let bytes = 0;
  for (let i = WARMUP; i < WARMUP + RUNS; i++) {
    const start = performance.now();
    const res = await request(i);
    ms.push(performance.now() - start);
    status = res.status;
    bytes = JSON.stringify(res.body).length;
    // A failing call times an error path, not the endpoint: the table must not hide it.
    if (status >= 400) throw new Error(`${endpoint} answered ${status}: ${JSON.stringify(res.body)}`);
  }
  ms.sort((a, b) => a - b);
  const round = (v: number) => Math.round(v * 10) / 10;
  const sample = { endpoint, p50: round(percentile(ms, 0.5)), p99: round(percentile(ms, 0.99)), status, bytes };
  console.log(`  ${endpoint.padEnd(44)} p50 ${sample.p50} ms  p99 ${sample.p99} ms  (last: ${status}, ${bytes} bytes)`);
  return sample;
}

function receiver(): Promise<{ server: Server; url: string }> {
  return new Promise((resolve) => {
    const server = createServer((req, res) => {
      req.resume();
      req.on('end', () => res.end('ok'));
    });
    server.listen(0, '127.0.0.1', () => {
      const addr = server.address();
      resolve({ server, url: `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}/hook` });
    });
  });
}

interface Ports {
  port: number;
  adminPort: number;
  simUrl: string;
  databaseUrl: string;
}

async function confirmed(databaseUrl: string, ids: string[]): Promise<void> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    for (let i = 0; i < 300; i++) {
      const { rows } = await client.query<{ n: number }>(`SELECT count(*)::int AS n FROM payments WHERE id = ANY($1::uuid[]) AND status = 'confirmed'`, [ids]);
      if (rows[0]?.n === ids.length) return;
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error('approved payments were not confirmed within 30 s');
  } finally {
    await client.end();
  }
}

async function startApi(ports: Ports): Promise<Proc> {
  const env = apiEnv({
    ...ports,
    adminToken: ADMIN_TOKEN,
    simulatorUrl: ports.simUrl,
    databaseUrl: ports.databaseUrl,
    // Requests are sent one after another; the partner limits would only add 429s to the table.
    extra: { RATE_LIMIT_PER_SECOND: '100000', RATE_LIMIT_PER_MINUTE: '1000000', RATE_LIMIT_PER_HOUR: '10000000' },
  });
  return startProcess(['dist/src/bin/api.js'], env, `http://127.0.0.1:${ports.port}/health/ready`, START_PROD_NODE_FLAGS);
}

/** The measured partner (with a webhook at a local receiver) and the others, through the admin API. */
async function createPartners(ports: Ports, hookUrl: string) {
  const create = (name: string) => createPartner(`http://127.0.0.1:${ports.adminPort}`, ADMIN_TOKEN, name);
  const partner = await create('Scale Bank');
  const others: string[] = [];
  for (let i = 0; i < OTHER_PARTNERS; i++) others.push((await create(`Other ${i}`)).id);
  const hook = await call(`http://127.0.0.1:${ports.port}/api/v1/webhooks`, {
    method: 'POST',
    headers: { 'x-api-key': partner.apiKey, 'content-type': 'application/json' },
    body: JSON.stringify({ url: hookUrl, secret: 'scale-bench-secret-0123456789', events: ['payment.submitted', 'payment.confirmed'] }),
  });
  return { partner, others, webhookId: (hook.body as { id: string }).id };
}

async function seed(databaseUrl: string, shape: Parameters<typeof seedStatements>[0]): Promise<number> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  const start = performance.now();
  try {
    for (const statement of seedStatements(shape)) await client.query(statement);
  } finally {
    await client.end();
  }
  return (performance.now() - start) / 1000;
}

/** Mongolian finance day (UTC+8) of now, as the simulator files settlements. */
const financeDay = () => new Date(Date.now() + 8 * 3600 * 1000).toISOString().slice(0, 10);

async function measureEndpoints(ports: Ports, apiKey: string, webhookId: string, totalPayments: number): Promise<Sample[]> {
  const api = `http://127.0.0.1:${ports.port}/api/v1`;
  const key = { 'x-api-key': apiKey };
  const json = { ...key, 'content-type': 'application/json' };
  const admin = `http://127.0.0.1:${ports.adminPort}`;
  const samples: Sample[] = [];
  const n = WARMUP + RUNS;

  samples.push(await timeEndpoint('GET /invoices?ttd= (search)', () => call(`${api}/invoices?ttd=${BENCH_REGISTER}`, { headers: key })));
  // The API never shows refNums; each live fixture's amount is 1000 + its number, which names it.
  const live = ((await call(`${api}/invoices?ttd=${BENCH_REGISTER}`, { headers: key })).body as { invoices: { id: string; amount: number }[] }).invoices
    .map((i) => ({ id: i.id, refNum: `LIVE-${i.amount - 1000}` }));
  if (live.length < LIVE_INVOICES) throw new Error(`search found ${live.length} of ${LIVE_INVOICES} live invoices`);
  const inv = (i: number) => live[i % live.length] as { id: string; refNum: string };
  samples.push(await timeEndpoint('GET /invoices/{id}', (i) => call(`${api}/invoices/${inv(i).id}`, { headers: key })));
  samples.push(await timeEndpoint('GET /invoices/ref/{refNum}', (i) => call(`${api}/invoices/ref/${inv(i).refNum}`, { headers: key })));

  const paid: string[] = [];
  samples.push(await timeEndpoint('POST /payments', async (i) => {
    const res = await call(`${api}/payments`, { method: 'POST', headers: { ...json, 'x-idempotency-key': randomUUID() }, body: JSON.stringify({ invoiceId: inv(i).id }) });
    paid.push((res.body as { id: string }).id);
    return res;
  }));
  // The ministry approves them now, so today's settlement names them.
  for (let i = 0; i < n; i++) await call(`${ports.simUrl}/__control/approve`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ refNum: inv(i).refNum }) });
  // Read once the confirmation job has recorded the approvals, so each read answers from the database.
  await confirmed(ports.databaseUrl, paid);
  samples.push(await timeEndpoint('GET /payments/{id}', (i) => call(`${api}/payments/${paid[i % paid.length]}`, { headers: key })));

  const toCancel: string[] = [];
  for (let i = n; i < 2 * n; i++) {
    const res = await call(`${api}/payments`, { method: 'POST', headers: { ...json, 'x-idempotency-key': randomUUID() }, body: JSON.stringify({ invoiceId: inv(i).id }) });
    toCancel.push((res.body as { id: string }).id);
  }
  samples.push(await timeEndpoint('DELETE /payments/{id}', (i) => call(`${api}/payments/${toCancel[i]}`, { method: 'DELETE', headers: key })));

  samples.push(await timeEndpoint('GET /reports/summary', () => call(`${api}/reports/summary`, { headers: key })));
  samples.push(await timeEndpoint('GET /reports/payments, page 1', () => call(`${api}/reports/payments?page=1&limit=20`, { headers: key })));
  const lastPage = Math.max(1, Math.ceil(totalPayments / 20));
  samples.push(await timeEndpoint('GET /reports/payments, last page', () => call(`${api}/reports/payments?page=${lastPage}&limit=20`, { headers: key })));
  samples.push(await timeEndpoint('POST /payments/report (today)', () =>
    call(`${api}/payments/report`, { method: 'POST', headers: json, body: JSON.stringify({ financeDay: financeDay() }) })));
  samples.push(await timeEndpoint('GET /webhooks', () => call(`${api}/webhooks`, { headers: key })));
  samples.push(await timeEndpoint('GET /webhooks/{id}/deliveries', () => call(`${api}/webhooks/${webhookId}/deliveries`, { headers: key })));
  samples.push(await timeEndpoint('POST /devices', (i) =>
    call(`${api}/devices`, { method: 'POST', headers: json, body: JSON.stringify({ userId: `user-${i}`, fcmToken: `token-${i}`, platform: 'android' }) })));
  const adminAuth = { authorization: `Bearer ${ADMIN_TOKEN}` };
  samples.push(await timeEndpoint('admin GET /metrics', () => fetch(`${admin}/metrics`, { headers: adminAuth }).then(async (r) => ({ status: r.status, body: await r.text() }))));
  samples.push(await timeEndpoint('admin GET /admin/partners', () => call(`${admin}/admin/partners`, { headers: adminAuth })));
  return samples;
}

async function withSimulator<T>(fn: (simUrl: string) => Promise<T>): Promise<T> {
  const port = await freePort();
  const sim = await startProcess(['dist/simulator/bin/simulator.js'], { SIMULATOR_PORT: String(port), SIMULATOR_FIXTURES: writeFixtures(), SIMULATOR_AUTO_APPROVE_MS: '0', LOG_LEVEL: 'warn' }, `http://127.0.0.1:${port}/mof/api/invoices/NOPE`);
  try {
    return await fn(`http://127.0.0.1:${port}`);
  } finally {
    await sim.stop();
  }
}

async function runVolume(volume: { invoices: number; payments: number }): Promise<VolumeResult> {
  console.log(`\n== ${volume.invoices.toLocaleString('en')} invoices / ${volume.payments.toLocaleString('en')} payments`);
  const db = await freshDatabase(PG_URL, 'bench_scale');
  if (!db) throw new Error('PostgreSQL is required');
  const hook = await receiver();
  try {
    return await withSimulator(async (simUrl) => {
      const ports = { port: await freePort(), adminPort: await freePort(), simUrl, databaseUrl: db.url };
      // The first start migrates the scratch database; partners are made the way an operator makes them.
      const first = await startApi(ports);
      const made = await createPartners(ports, hook.url).finally(() => first.stop());
      const seedS = await seed(db.url, { ...volume, partnerId: made.partner.id, webhookId: made.webhookId, otherPartnerIds: made.others });
      console.log(`  seeded in ${seedS.toFixed(0)} s`);
      const sizesYear = await tableSizes(db.url);
      const api = await startApi(ports);
      let samples: Sample[];
      let peakRssMb: number;
      try {
        const listed = await call(`http://127.0.0.1:${ports.port}/api/v1/reports/payments?limit=1`, { headers: { 'x-api-key': made.partner.apiKey } });
        const partnerPayments = (listed.body as { total: number }).total;
        samples = await measureEndpoints(ports, made.partner.apiKey, made.webhookId, partnerPayments);
        peakRssMb = api.peakRssMb();
        console.log(`  peak RSS of the service: ${peakRssMb} MB`);
      } finally {
        await api.stop();
      }
      const plans = await explainAll(db.url, { partnerId: made.partner.id, webhookId: made.webhookId, settledIds: await todaysPaymentIds(db.url, made.partner.id), lastOffset: Math.max(0, Math.floor(volume.payments * 0.6) - 20) });
      writeFileSync(`bench/results/scale-plans-${label(volume.invoices)}.md`, `# Plans at ${volume.invoices.toLocaleString('en')} invoices / ${volume.payments.toLocaleString('en')} payments\n\n${plans}`);
      const sweep = await sweepToSteadyState(db.url);
      const sizesSteady = await tableSizes(db.url);
      return { ...volume, seedS, samples, peakRssMb, sizesYear, sizesSteady, sweep };
    });
  } finally {
    hook.server.close();
    if (KEEP) console.log(`  kept ${db.url}`);
    else await db.drop();
  }
}

async function todaysPaymentIds(url: string, partnerId: string): Promise<string[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ id: string }>(`SELECT id FROM payments WHERE partner_id = $1 AND created_at > now() - interval '1 hour'`, [partnerId]);
    return rows.map((r) => r.id);
  } finally {
    await client.end();
  }
}

const label = (n: number) => (n >= 1_000_000 ? `${n / 1_000_000}M` : `${n / 1000}k`);

function report(results: VolumeResult[]): string {
  const first = results[0];
  const last = results[results.length - 1];
  if (!first || !last) return '';
  const head = results.map((r) => `${label(r.invoices)} / ${label(r.payments)}`);
  const lines = [
    `| endpoint (p50 / p99 ms) | ${head.join(' | ')} | p99 ratio ${label(last.invoices)} / ${label(first.invoices)} |`,
    `|---|${results.map(() => '---|').join('')}---|`,
  ];
  for (const s of first.samples) {
    const cells = results.map((r) => {
      const m = r.samples.find((x) => x.endpoint === s.endpoint);
      return m ? `${m.p50} / ${m.p99}` : '';
    });
    const lastP99 = last.samples.find((x) => x.endpoint === s.endpoint)?.p99 ?? NaN;
    lines.push(`| \`${s.endpoint}\` | ${cells.join(' | ')} | ${(lastP99 / s.p99).toFixed(2)} |`);
  }
  lines.push(`| peak RSS of the service (MB) | ${results.map((r) => r.peakRssMb).join(' | ')} | |`);
  lines.push(`| seeding (s) | ${results.map((r) => r.seedS.toFixed(0)).join(' | ')} | |`);
  lines.push('', '**Table sizes** (rows / total size with indexes): after a year with no retention, then after the retention sweep', '');
  lines.push(`| table | ${results.map((r) => `${label(r.invoices)}: a year | ${label(r.invoices)}: swept`).join(' | ')} |`);
  lines.push(`|---|${results.map(() => '---|---|').join('')}`);
  for (const t of first.sizesYear) {
    const cells = results.flatMap((r) => [r.sizesYear, r.sizesSteady].map((sizes) => {
      const x = sizes.find((y) => y.table === t.table);
      return x ? `${x.rows.toLocaleString('en')} / ${x.mb} MB` : '';
    }));
    lines.push(`| ${t.table} | ${cells.join(' | ')} |`);
  }
  lines.push('', ...results.map((r) => `Retention sweep at ${label(r.invoices)}: ${r.sweep.seconds.toFixed(0)} s, deleted ${Object.entries(r.sweep.deleted).map(([k, v]) => `${v.toLocaleString('en')} ${k}`).join(', ')}`));
  return lines.join('\n');
}

async function main(): Promise<void> {
  const started = Date.now();
  execFileSync('npm', ['run', '--silent', 'build'], { stdio: 'inherit' });
  mkdirSync('bench/results', { recursive: true });
  const results: VolumeResult[] = [];
  for (const volume of VOLUMES) results.push(await runVolume(volume));
  const md = report(results);
  writeFileSync('bench/results/scale.md', `${md}\n`);
  writeFileSync('bench/results/scale.json', JSON.stringify({ date: new Date().toISOString(), node: process.version, runs: RUNS, warmup: WARMUP, apiNodeFlags: START_PROD_NODE_FLAGS, results }, null, 2));
  console.log(`\n${md}\n\nbench:scale took ${Math.round((Date.now() - started) / 1000)} s`);
}

await main();
