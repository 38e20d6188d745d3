/**
 * `npm run bench:scale`: every partner endpoint and the operator's reports, one request after
 * another, over a year of data at three volumes (10k invoices / 3k payments, 1M / 300k, 5M / 1.5M
 * by default) in PostgreSQL, with the service run as `npm run start:prod` runs it (production
 * build, its heap cap), once the year is swept to what retention keeps (the expired months dropped
 * one at a time, timed). Every volume has its own database, simulator and service, all started
 * before any call is timed; each endpoint is called WARMUP times untimed on each volume, then RUNS
 * timed rounds (50 and 800 by default), a round calling every volume once, so the host's drift over
 * the run falls on every volume alike. Prints and writes bench/results/scale.{md,json} (the table
 * with a p99 ratio column per volume, peak RSS, table sizes before and after the retention sweep)
 * and bench/results/scale-plans-*.md (EXPLAIN ANALYZE of the report and claim queries).
 *
 * `--replica` runs the same volumes on a PostgreSQL primary of the bench's own with one streaming
 * hot standby made from it once every volume is seeded, each service given DATABASE_REPLICA_URL,
 * and writes bench/results/scale-replica.{md,json}: the same table, and for each row where its
 * routed reads ran (database_routed_reads_total scraped around each endpoint's timed rounds).
 * See bench/README.md, "Scale: a year of data".
 */
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import pg from 'pg';
import type { PgCluster } from '../test/helpers/pg-cluster.js';
import { apiEnv, benchFlag, createPartner, createTeardown, freePort, freshDatabase, observed, percentile, startProcess, type Machine, type Proc, START_PROD_NODE_FLAGS } from './bench-processes.js';
import { seedStatements } from './scale-seed.js';
import { loadHistory, type History } from './scale-history.js';
import { explainAll } from './scale-plans.js';
import { countRouted, readsOnReplica, servedBy, startPrimary, startStandby, type Routed } from './scale-replica.js';
import { sweepToSteadyState, tableSizes, type TableSize } from './scale-retention.js';

const PG_URL = benchFlag('pg') ?? 'postgres://postgres@127.0.0.1:5432/test';
const VOLUMES = (benchFlag('volumes') ?? '10000:3000,1000000:300000,5000000:1500000').split(',').map((v) => {
  const [invoices, payments] = v.split(':').map(Number);
  return { invoices: invoices ?? 0, payments: payments ?? 0 };
});
/** Timed calls per endpoint and volume: of 800, the p99 (nearest rank) is the 792nd fastest, eight calls slower than it. */
const RUNS = Number(benchFlag('runs') ?? 800);
const WARMUP = Number(benchFlag('warmup') ?? 50);
const CALLS = WARMUP + RUNS;
const KEEP = process.argv.includes('--keep');
const REPLICA = process.argv.includes('--replica');
const OUT = benchFlag('out') ?? 'bench/results';
const ADMIN_TOKEN = 'bench-scale-admin-token';
/** One taxpayer's invoices in the simulator: what the timed search answers, the same at every volume. */
const SEARCH_SIZE = 120;
/** Live invoices: one per POST /payments call, one per payment a DELETE cancels. */
const LIVE_INVOICES = 2 * CALLS;
const REGISTERS = Math.ceil(LIVE_INVOICES / SEARCH_SIZE);
const register = (r: number) => `SCALEBENCH${r}`;
const OTHER_PARTNERS = 40;
/** Answers whose sizes differ by more than this share (and a few digits) between volumes are not alike. */
const BYTES_TOLERANCE = 0.05;
const BYTES_SLACK = 64;

const teardown = createTeardown();

interface Sample {
  endpoint: string;
  /** Timed calls the percentiles are of. */
  n: number;
  p50: number;
  p99: number;
  /** The last answer's status (every timed answer is below 400). */
  status: number;
  /** The last answer's size: the answers must be alike at every volume for the times to compare. */
  bytes: number;
  /** What the whole machine did over the timed calls: on a shared host, a p99 taken while others were busy says little. */
  machine: Machine;
  /** With --replica: the routed reads of the timed calls, by where they ran. */
  reads?: Routed;
  servedBy?: string;
}

interface VolumeResult {
  invoices: number;
  payments: number;
  seedS: number;
  history: History;
  samples: Sample[];
  peakRssMb: number;
  /** Storage after the year, then after the retention sweep the endpoints are timed on. */
  storage?: { sizesYear: TableSize[]; sizesSteady: TableSize[]; sweep: Awaited<ReturnType<typeof sweepToSteadyState>> };
  /** With --replica: the standby's base backup and its replay up to the primary before timing. */
  standby?: { baseBackupS: number; replayS: number };
}

function writeFixtures(tag: number): string {
  const sources = ['mof', 'etax', 'police'] as const;
  const invoices = Array.from({ length: LIVE_INVOICES }, (_, i) => ({
    source: sources[i % 3],
    refNum: `LIVE-${i}`,
    description: 'Scale bench invoice',
    amount: 1000 + i,
    status: 'open',
    dueDate: '2099-01-01T00:00:00.000Z',
    issuedAt: '2026-01-01T00:00:00.000Z',
    payer: { register: register(Math.floor(i / SEARCH_SIZE)), name: 'Bench Payer' },
    payee: { id: 'ORG-1', name: 'Org' },
  }));
  const path = join(tmpdir(), `scale-fixtures-${process.pid}-${tag}.json`);
  writeFileSync(path, JSON.stringify({ invoices }));
  return path;
}

type Answer = { status: number; body: unknown };

async function call(url: string, init: RequestInit = {}): Promise<Answer> {
  const res = await fetch(url, init);
  const text = await res.text();
  return { status: res.status, body: text ? (JSON.parse(text) as unknown) : null };
}

/** An answer that must have succeeded, for the calls that set up what is timed. */
async function ok<T>(url: string, init: RequestInit = {}): Promise<T> {
  const res = await call(url, init);
  if (res.status >= 400) throw new Error(`${init.method ?? 'GET'} ${url} answered ${res.status}: ${JSON.stringify(res.body)}`);
  return res.body as T;
}

interface Ports {
  port: number;
  adminPort: number;
  simUrl: string;
  databaseUrl: string;
}

interface Measured {
  partner: { id: string; apiKey: string };
  others: string[];
  webhookId: string;
  /** Another partner with a full page of seeded deliveries. */
  otherPartnerId: string;
  /** The seeded events' highest position. */
  lastPosition: number;
}

/**
 * One volume: its database, simulator and service, and what its timed calls need (the live
 * invoices, the payments and cases the calls made). The volumes are timed in lockstep, call by
 * call, so what the host does meanwhile falls on every volume alike.
 */
interface Lane {
  volume: { invoices: number; payments: number };
  ports: Ports;
  made: Measured;
  seedS: number;
  history: History;
  storage: NonNullable<VolumeResult['storage']>;
  api: string;
  admin: string;
  key: Record<string, string>;
  json: Record<string, string>;
  samples: Sample[];
  live: { id: string; refNum: string }[];
  paid: string[];
  toCancel: string[];
  cases: string[];
  eventIds: string[];
  totalPayments: number;
  auditTarget: string;
}

type Request = (lane: Lane, i: number) => Promise<Answer>;

/**
 * WARMUP untimed calls on every volume, then RUNS timed rounds: each round calls every volume once,
 * in an order that rotates, so no volume always runs first or right after the same one. `i`
 * numbers the call. With --replica, the routed reads of each volume's timed calls are counted.
 */
async function timeEndpoint(lanes: Lane[], endpoint: string, request: Request): Promise<void> {
  for (let i = 0; i < WARMUP; i++) for (const lane of lanes) await request(lane, i);
  const ms = lanes.map((): number[] => []);
  const last = lanes.map(() => ({ status: 0, bytes: 0 }));
  const timed = async () => {
    for (let i = WARMUP; i < CALLS; i++) {
      for (let k = 0; k < lanes.length; k++) {
        const j = (i + k) % lanes.length;
        const lane = lanes[j] as Lane;
        const start = performance.now();
        const res = await request(lane, i);
        ms[j]?.push(performance.now() - start);
        last[j] = { status: res.status, bytes: JSON.stringify(res.body).length };
        // A failing call times an error path, not the endpoint: the table must not hide it.
        if (res.status >= 400) throw new Error(`${endpoint} at ${label(lane.volume.invoices)} answered ${res.status}: ${JSON.stringify(res.body)}`);
      }
    }
  };
  const { value: reads, machine } = await observed(async () => {
    if (REPLICA) return countRouted(lanes.map((l) => l.admin), timed);
    await timed();
    return undefined;
  });
  const round = (v: number) => Math.round(v * 10) / 10;
  const cells: string[] = [];
  lanes.forEach((lane, j) => {
    const sorted = (ms[j] ?? []).sort((a, b) => a - b);
    const { status, bytes } = last[j] ?? { status: 0, bytes: 0 };
    const sample: Sample = { endpoint, n: sorted.length, p50: round(percentile(sorted, 0.5)), p99: round(percentile(sorted, 0.99)), status, bytes, machine };
    const routed = reads?.[j];
    if (routed) Object.assign(sample, { reads: routed, servedBy: servedBy(routed, sorted.length) });
    lane.samples.push(sample);
    cells.push(`${label(lane.volume.invoices)} ${sample.p50} / ${sample.p99}${sample.servedBy ? ` (${sample.servedBy})` : ''}`);
  });
  console.log(`  ${endpoint.padEnd(52)} p50 / p99 ms: ${cells.join(', ')}  (n ${RUNS} each, machine ${machine.busyPct}% busy)`);
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

/** Polls `sql` (a count) on the database until it is `want`, for what the service's jobs finish after the calls. */
async function until(databaseUrl: string, what: string, sql: string, params: unknown[], want: (n: number) => boolean): Promise<void> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    for (let i = 0; i < 600; i++) {
      const { rows } = await client.query<{ n: number }>(sql, params);
      if (want(rows[0]?.n ?? 0)) return;
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error(`${what} within 60 s`);
  } finally {
    await client.end();
  }
}

async function startApi(ports: Ports, replicaUrl?: string): Promise<Proc> {
  const env = apiEnv({
    ...ports,
    adminToken: ADMIN_TOKEN,
    simulatorUrl: ports.simUrl,
    databaseUrl: ports.databaseUrl,
    extra: {
      // Requests are sent one after another; the partner limits would only add 429s to the table.
      RATE_LIMIT_PER_SECOND: '100000',
      RATE_LIMIT_PER_MINUTE: '1000000',
      RATE_LIMIT_PER_HOUR: '10000000',
      // The timed cases' evidence is gathered before the next endpoint is timed, not over its calls.
      CASE_POLL_MS: '500',
      // The year's expired months are the bench's to drop, timed, before the endpoints: not the service's pass's, while they are timed.
      RETENTION_SWEEP_MS: String(7 * 24 * 3600 * 1000),
      ...(replicaUrl ? { DATABASE_REPLICA_URL: replicaUrl } : {}),
    },
  });
  const { value: proc, release } = await teardown.acquire('the service', () => startProcess(['dist/src/bin/api.js'], env, `http://127.0.0.1:${ports.port}/health/ready`, START_PROD_NODE_FLAGS), (p) => p.stop());
  return { ...proc, stop: release };
}

/** The measured partner (with a webhook at a local receiver) and the others, through the admin API. */
async function createPartners(ports: Ports, hookUrl: string) {
  const create = (name: string) => createPartner(`http://127.0.0.1:${ports.adminPort}`, ADMIN_TOKEN, name);
  const partner = await create('Scale Bank');
  const others: string[] = [];
  for (let i = 0; i < OTHER_PARTNERS; i++) others.push((await create(`Other ${i}`)).id);
  const hook = await ok<{ id: string }>(`http://127.0.0.1:${ports.port}/api/v1/webhooks`, {
    method: 'POST',
    headers: { 'x-api-key': partner.apiKey, 'content-type': 'application/json' },
    body: JSON.stringify({ url: hookUrl, secret: 'scale-bench-secret-0123456789', events: ['payment.submitted', 'payment.confirmed'] }),
  });
  return { partner, others, webhookId: hook.id };
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

async function firstValue(databaseUrl: string, sql: string, params: unknown[] = []): Promise<string> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const { rows } = await client.query<{ v: string }>(sql, params);
    if (rows[0]?.v === undefined) throw new Error(`nothing found by ${sql}`);
    return rows[0].v;
  } finally {
    await client.end();
  }
}

/** Mongolian finance day (UTC+8) of a time, as the simulator files settlements. */
const financeDayOf = (at: number) => new Date(at + 8 * 3600 * 1000).toISOString().slice(0, 10);

/** The live invoices, found by searching each bench taxpayer once: the API never shows refNums, each fixture's amount (1000 + its number) names it. */
async function liveInvoices(lane: Lane): Promise<{ id: string; refNum: string }[]> {
  const live: { id: string; refNum: string; n: number }[] = [];
  for (let r = 0; r < REGISTERS; r++) {
    const found = await ok<{ invoices: { id: string; amount: number }[] }>(`${lane.api}/invoices?ttd=${register(r)}`, { headers: lane.key });
    live.push(...found.invoices.map((i) => ({ id: i.id, refNum: `LIVE-${i.amount - 1000}`, n: i.amount - 1000 })));
  }
  if (live.length < LIVE_INVOICES) throw new Error(`the searches found ${live.length} of ${LIVE_INVOICES} live invoices`);
  return live.sort((a, b) => a.n - b.n);
}

/**
 * The bench's PostgreSQL runs with autovacuum off, so no statistics follow what the live part
 * writes. The live part grows the current month's partitions by a tenth or more, past the share
 * at which a production server's auto-analyze refreshes them within its next minute; without it,
 * the planner still saw the month as seeded (at 1M it read every live event after a follower's
 * position and sorted them, 2.3 -> 5.3 ms p50). So the bench analyzes where auto-analyze would
 * have, after each step that writes, outside the timed calls.
 */
async function analyzeAsAutovacuumWould(lanes: Lane[]): Promise<void> {
  for (const lane of lanes) await runStatement(lane.ports.databaseUrl, 'ANALYZE');
}

/** Work between timed endpoints, volume after volume. */
async function eachLane(lanes: Lane[], step: (lane: Lane) => Promise<void>): Promise<void> {
  for (const lane of lanes) await step(lane);
}

const inv = (lane: Lane, i: number) => lane.live[i % lane.live.length] as { id: string; refNum: string };

async function measurePartnerEndpoints(lanes: Lane[]): Promise<void> {
  const time = (endpoint: string, request: Request) => timeEndpoint(lanes, endpoint, request);

  await time('GET /invoices?ttd= (search)', (l) => call(`${l.api}/invoices?ttd=${register(0)}`, { headers: l.key }));
  await eachLane(lanes, async (l) => void (l.live = await liveInvoices(l)));
  await time('GET /invoices/{id}', (l, i) => call(`${l.api}/invoices/${inv(l, i).id}`, { headers: l.key }));
  await time('GET /invoices/ref/{refNum}', (l, i) => call(`${l.api}/invoices/ref/${inv(l, i).refNum}`, { headers: l.key }));

  await time('POST /payments', async (l, i) => {
    const res = await call(`${l.api}/payments`, { method: 'POST', headers: { ...l.json, 'x-idempotency-key': randomUUID() }, body: JSON.stringify({ invoiceId: inv(l, i).id }) });
    l.paid.push((res.body as { id: string }).id);
    return res;
  });
  await eachLane(lanes, async (l) => {
    // The ministry approves them now, so today's settlement names them.
    for (let i = 0; i < CALLS; i++) await ok(`${l.ports.simUrl}/__control/approve`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ refNum: inv(l, i).refNum }) });
  });
  // Read once the confirmation job has recorded the approvals, so each read answers from the database.
  await eachLane(lanes, (l) => until(l.ports.databaseUrl, 'approved payments were not confirmed', `SELECT count(*)::int AS n FROM payments WHERE id = ANY($1::uuid[]) AND status = 'confirmed'`, [l.paid], (n) => n === l.paid.length));
  await analyzeAsAutovacuumWould(lanes);
  await time('GET /payments/{id}', (l, i) => call(`${l.api}/payments/${l.paid[i % l.paid.length]}`, { headers: l.key }));

  await eachLane(lanes, async (l) => {
    for (let i = CALLS; i < 2 * CALLS; i++) {
      const res = await ok<{ id: string }>(`${l.api}/payments`, { method: 'POST', headers: { ...l.json, 'x-idempotency-key': randomUUID() }, body: JSON.stringify({ invoiceId: inv(l, i).id }) });
      l.toCancel.push(res.id);
    }
  });
  await analyzeAsAutovacuumWould(lanes);
  await time('DELETE /payments/{id}', (l, i) => call(`${l.api}/payments/${l.toCancel[i]}`, { method: 'DELETE', headers: l.key }));
  await analyzeAsAutovacuumWould(lanes);

  await time('GET /reports/summary', (l) => call(`${l.api}/reports/summary`, { headers: l.key }));
  await time('GET /reports/payments, page 1', (l) => call(`${l.api}/reports/payments?page=1&limit=20`, { headers: l.key }));
  await time('GET /reports/payments, last page', (l) => call(`${l.api}/reports/payments?page=${Math.max(1, Math.ceil(l.totalPayments / 20))}&limit=20`, { headers: l.key }));
  const today = financeDayOf(Date.now());
  await time('POST /payments/report (today)', (l) => call(`${l.api}/payments/report`, { method: 'POST', headers: l.json, body: JSON.stringify({ financeDay: today }) }));

  await time('GET /events (newest page)', (l) => call(`${l.api}/events`, { headers: l.key }));
  // A follower near the head of the feed: from the first event of the live part.
  await time('GET /events?afterSequence= (a follower)', (l) => call(`${l.api}/events?afterSequence=${l.made.lastPosition}`, { headers: l.key }));
  await eachLane(lanes, async (l) => {
    l.eventIds = (await ok<{ items: { id: string }[] }>(`${l.api}/events`, { headers: l.key })).items.map((e) => e.id);
  });
  await time('GET /events/{id}', (l, i) => call(`${l.api}/events/${l.eventIds[i % l.eventIds.length]}`, { headers: l.key }));

  await time('GET /webhooks', (l) => call(`${l.api}/webhooks`, { headers: l.key }));
  await time('GET /webhooks/{id}', (l) => call(`${l.api}/webhooks/${l.made.webhookId}`, { headers: l.key }));
  await time('GET /webhooks/{id}/deliveries', (l) => call(`${l.api}/webhooks/${l.made.webhookId}/deliveries`, { headers: l.key }));
  await time('POST /devices', (l, i) => call(`${l.api}/devices`, { method: 'POST', headers: l.json, body: JSON.stringify({ userId: `user-${i}`, fcmToken: `token-${i}`, platform: 'android' }) }));

  await time('POST /cases', async (l, i) => {
    const res = await call(`${l.api}/cases`, { method: 'POST', headers: l.json, body: JSON.stringify({ paymentId: l.paid[i], type: 'other', description: 'The customer asks for a receipt' }) });
    l.cases.push((res.body as { id: string }).id);
    return res;
  });
  await eachLane(lanes, (l) => until(l.ports.databaseUrl, "the new cases' evidence was not gathered", `SELECT count(*)::int AS n FROM cases WHERE evidence_at IS NULL`, [], (n) => n === 0));
  await analyzeAsAutovacuumWould(lanes);
  await time('GET /cases', (l) => call(`${l.api}/cases`, { headers: l.key }));
  await time('GET /cases/{id}', (l, i) => call(`${l.api}/cases/${l.cases[i % l.cases.length]}`, { headers: l.key }));
}

async function measureAdminEndpoints(lanes: Lane[]): Promise<void> {
  const auth = { authorization: `Bearer ${ADMIN_TOKEN}` };
  const get = (path: (l: Lane) => string): Request => (l) => call(`${l.admin}${path(l)}`, { headers: auth });
  const time = (endpoint: string, request: Request) => timeEndpoint(lanes, endpoint, request);
  const weekAgo = new Date(Date.now() - 7 * 24 * 3600 * 1000).toISOString();
  const yesterday = financeDayOf(Date.now() - 24 * 3600 * 1000);

  await time('admin GET /metrics', (l) => fetch(`${l.admin}/metrics`, { headers: auth }).then(async (r) => ({ status: r.status, body: await r.text() })));
  await time('admin GET /admin/partners', get(() => '/admin/partners'));
  await time('admin GET /admin/payments (newest)', get(() => '/admin/payments'));
  await time('admin GET /admin/payments?partnerId=&status=confirmed', get((l) => `/admin/payments?partnerId=${l.made.partner.id}&status=confirmed`));
  await time('admin GET /admin/payments?to= (a week ago)', get(() => `/admin/payments?to=${encodeURIComponent(weekAgo)}`));
  await time('admin GET /admin/payments?refNum=', get(() => '/admin/payments?refNum=SC-3'));
  await time('admin GET /admin/payments/{id} (timeline)', (l, i) => get(() => `/admin/payments/${l.paid[i % l.paid.length]}`)(l, i));
  await time('admin GET /admin/deliveries (newest)', get(() => '/admin/deliveries'));
  await time('admin GET /admin/deliveries?partnerId= (another)', get((l) => `/admin/deliveries?partnerId=${l.made.otherPartnerId}`));
  await time('admin GET /admin/audit (newest)', get(() => '/admin/audit'));
  await time('admin GET /admin/audit?operator=', get(() => '/admin/audit?operator=ops-1'));
  await time('admin GET /admin/audit?targetId=', get((l) => `/admin/audit?targetId=${l.auditTarget}`));
  await time('admin GET /admin/reconciliations (newest)', get(() => '/admin/reconciliations'));
  await time('admin GET /admin/reconciliations?financeDay=', get(() => `/admin/reconciliations?financeDay=${yesterday}`));
  await time('admin GET /admin/discrepancies (newest)', get(() => '/admin/discrepancies'));
  await time('admin GET /admin/discrepancies?status=open', get(() => '/admin/discrepancies?status=open'));
  await time('admin GET /admin/cases (unresolved queue)', get(() => '/admin/cases'));
  await time('admin GET /admin/cases?status=resolved', get(() => '/admin/cases?status=resolved'));
  await time('admin GET /admin/cases/{id}', (l, i) => get(() => `/admin/cases/${l.cases[i % l.cases.length]}`)(l, i));
  await time('admin GET /admin/pushes', get(() => '/admin/pushes'));
}

/** A simulator of the volume's own: its live invoices are paid and approved by that volume's calls only. */
async function startSimulator(): Promise<{ url: string; stop: () => Promise<void> }> {
  const port = await freePort();
  const fixtures = writeFixtures(port);
  const removeFixtures = teardown.hold('the fixtures file', async () => rmSync(fixtures, { force: true }));
  try {
    const env = { SIMULATOR_PORT: String(port), SIMULATOR_FIXTURES: fixtures, SIMULATOR_AUTO_APPROVE_MS: '0', LOG_LEVEL: 'warn' };
    const { release } = await teardown.acquire('the simulator', () => startProcess(['dist/simulator/bin/simulator.js'], env, `http://127.0.0.1:${port}/mof/api/invoices/NOPE`), (sim) => sim.stop());
    return { url: `http://127.0.0.1:${port}`, stop: () => release().finally(removeFixtures) };
  } catch (err) {
    await removeFixtures();
    throw err;
  }
}

/**
 * A volume ready to be timed: a scratch database migrated, the partners made the way an operator
 * makes them, the year seeded with its history, then swept to what the service keeps (the months
 * past retention dropped one at a time and timed, as the service's pass would have dropped them
 * month after month) and checkpointed. `release` drops the database and stops the simulator.
 */
async function prepareLane(volume: Lane['volume'], cluster: PgCluster | undefined, hookUrl: string): Promise<{ lane: Lane; release: () => Promise<void> }> {
  console.log(`\n== ${volume.invoices.toLocaleString('en')} invoices / ${volume.payments.toLocaleString('en')} payments${cluster ? ', on the primary of a streaming replica' : ''}`);
  const { value: db, release: dropDb } = await teardown.acquire(
    'the scratch database',
    async () => {
      const made = await freshDatabase(cluster ? cluster.url('postgres') : PG_URL, 'bench_scale');
      if (!made) throw new Error('PostgreSQL is required');
      return made;
    },
    async (made) => {
      if (KEEP && !cluster) console.log(`  kept ${made.url}`);
      else await made.drop();
    },
  );
  let sim: { url: string; stop: () => Promise<void> } | undefined;
  try {
    sim = await startSimulator();
    const ports = { port: await freePort(), adminPort: await freePort(), simUrl: sim.url, databaseUrl: db.url };
    const first = await startApi(ports);
    const made = await createPartners(ports, hookUrl).finally(() => first.stop());
    const seedS = await seed(db.url, { ...volume, partnerId: made.partner.id, webhookId: made.webhookId, otherPartnerIds: made.others });
    const history = await loadHistory(db.url);
    console.log(`  seeded in ${seedS.toFixed(0)} s; ${history.positioned.toLocaleString('en')} events positioned, ${history.runs} reconciliation runs, ${history.discrepancies.toLocaleString('en')} discrepancies, ${history.cases.toLocaleString('en')} cases, ${history.audit.toLocaleString('en')} audit entries`);
    const sizesYear = await tableSizes(db.url);
    const sweep = await sweepToSteadyState(db.url);
    const sizesSteady = await tableSizes(db.url);
    console.log(`  swept to the retention's steady state in ${sweep.seconds.toFixed(0)} s: ${sweep.months.months} months dropped, the slowest in ${Math.round(sweep.months.slowestMonthS * 1000)} ms`);
    // The seed's and the sweep's dirty pages written out now, not by the checkpointer while endpoints are timed.
    await runStatement(db.url, 'CHECKPOINT');
    const lane: Lane = {
      volume,
      ports,
      made: { ...made, lastPosition: history.lastPosition, otherPartnerId: await busyOtherPartner(db.url, made.partner.id) },
      seedS,
      history,
      storage: { sizesYear, sizesSteady, sweep },
      api: `http://127.0.0.1:${ports.port}/api/v1`,
      admin: `http://127.0.0.1:${ports.adminPort}`,
      key: { 'x-api-key': made.partner.apiKey },
      json: { 'x-api-key': made.partner.apiKey, 'content-type': 'application/json' },
      samples: [],
      live: [],
      paid: [],
      toCancel: [],
      cases: [],
      eventIds: [],
      totalPayments: 0,
      // Seeded history, the same kind at every volume: the oldest resolved discrepancy's audit entry.
      auditTarget: await firstValue(db.url, `SELECT target_id AS v FROM audit_log WHERE action = 'discrepancy.resolve' ORDER BY id LIMIT 1`),
    };
    const stopSim = sim.stop;
    return { lane, release: () => stopSim().finally(dropDb) };
  } catch (err) {
    await sim?.stop();
    await dropDb();
    throw err;
  }
}

/**
 * The timed part: every volume's service started afresh (so its peak RSS, VmHWM, covers only the
 * measured calls), with reads on the replica once they go there, then the partner's endpoints and
 * the operator's, each in lockstep across the volumes.
 */
async function measure(lanes: Lane[], replicaUrl?: (lane: Lane) => string): Promise<Map<Lane, number>> {
  const apis: Proc[] = [];
  try {
    for (const lane of lanes) apis.push(await startApi(lane.ports, replicaUrl?.(lane)));
    for (const lane of lanes) {
      if (replicaUrl) await readsOnReplica(lane.admin, () => call(`${lane.admin}/admin/reconciliations`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } }));
      lane.totalPayments = (await ok<{ total: number }>(`${lane.api}/reports/payments?limit=1`, { headers: lane.key })).total;
    }
    await measurePartnerEndpoints(lanes);
    await measureAdminEndpoints(lanes);
    const peak = new Map(lanes.map((lane, j) => [lane, apis[j]?.peakRssMb() ?? 0]));
    console.log(`  peak RSS of the services: ${lanes.map((l) => `${label(l.volume.invoices)} ${peak.get(l)} MB`).join(', ')}`);
    return peak;
  } finally {
    for (const api of apis) await api.stop();
  }
}

async function writePlans(lane: Lane): Promise<void> {
  const url = lane.ports.databaseUrl;
  const plans = await explainAll(url, {
    partnerId: lane.made.partner.id,
    webhookId: lane.made.webhookId,
    settledIds: await todaysPaymentIds(url, lane.made.partner.id),
    lastOffset: Math.max(0, Math.floor(lane.volume.payments * 0.6) - 20),
    otherPartnerId: lane.made.otherPartnerId,
    auditTargetId: lane.auditTarget,
  });
  writeFileSync(join(OUT, `scale-plans-${label(lane.volume.invoices)}.md`), `# Plans at ${lane.volume.invoices.toLocaleString('en')} invoices / ${lane.volume.payments.toLocaleString('en')} payments\n\n${plans}`);
}

/** Another partner whose seeded deliveries fill a page of the operator's delivery log (the seed gives payments to some of them only). */
function busyOtherPartner(url: string, partnerId: string): Promise<string> {
  return firstValue(
    url,
    `SELECT w.partner_id AS v FROM webhooks w
     WHERE w.partner_id <> $1 AND (SELECT count(*) FROM (SELECT 1 FROM webhook_deliveries d WHERE d.webhook_id = w.id LIMIT 50) page) = 50
     ORDER BY w.partner_id LIMIT 1`,
    [partnerId],
  );
}

/** One maintenance statement (CHECKPOINT, ANALYZE) on a connection of its own. */
async function runStatement(url: string, statement: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  await client.query(statement).finally(() => client.end());
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
const sizeCell = (x: TableSize | undefined) => (x ? `${x.rows.toLocaleString('en')} / ${x.mb} MB${x.partitions > 0 ? ` (${x.partitions} partitions)` : ''}` : '');

function storageReport(results: VolumeResult[]): string[] {
  const stored = results.filter((r) => r.storage);
  const first = stored[0]?.storage;
  if (!first) return [];
  const lines = ['', '**Table sizes** (rows / total size with indexes, summed over its partitions where a table has them): after a year with no retention, then after the retention sweep, on which the endpoints above were timed', ''];
  lines.push(`| table | ${stored.map((r) => `${label(r.invoices)}: a year | ${label(r.invoices)}: swept`).join(' | ')} |`);
  lines.push(`|---|${stored.map(() => '---|---|').join('')}`);
  for (const t of first.sizesYear) {
    const cells = stored.flatMap((r) => [r.storage?.sizesYear, r.storage?.sizesSteady].map((sizes) => sizeCell(sizes?.find((y) => y.table === t.table))));
    lines.push(`| ${t.table} | ${cells.join(' | ')} |`);
  }
  lines.push('', ...stored.map((r) => `Retention sweep at ${label(r.invoices)}: ${r.storage?.sweep.seconds.toFixed(0)} s, deleted ${Object.entries(r.storage?.sweep.deleted ?? {}).map(([k, v]) => `${v.toLocaleString('en')} ${k}`).join(', ')}`));
  lines.push(
    '',
    ...stored.map((r) => {
      const m = r.storage?.sweep.months;
      if (!m || m.months === 0) return `Months dropped at ${label(r.invoices)}: none past retention`;
      return `Months dropped at ${label(r.invoices)}: ${m.months} months past retention, one at a time (${m.partitions} partitions: each month's events, deliveries and pushes, and attempts), ${m.seconds.toFixed(2)} s in all, ${Math.round((m.seconds / m.months) * 1000)} ms a month on average, the slowest month ${Math.round(m.slowestMonthS * 1000)} ms`;
    }),
  );
  return lines;
}

const row = (cells: string[]) => `| ${cells.join(' | ')} |`;

function report(results: VolumeResult[]): string {
  const first = results[0];
  if (!first) return '';
  const rest = results.slice(1);
  /** A volume's cells: its times, and with --replica where the reads ran. */
  const perVolume = (times: string, reads = '') => (REPLICA ? [times, reads] : [times]);
  const lines = [
    `A year of payments and invoices; of events, deliveries and attempts what their retention keeps (the months past it dropped first, timed below). The volumes are timed in lockstep, each with its own database, simulator and service: each endpoint, ${WARMUP} calls untimed on every volume, then ${RUNS} rounds of one call to each volume (in an order that rotates); p50 / p99 of a volume's ${RUNS} timed calls (nearest rank: the p99 is call ${Math.ceil(0.99 * RUNS)} of ${RUNS}, fastest first).${REPLICA ? ' Reads: where the routed reads of the timed calls ran (database_routed_reads_total), or not routed.' : ''} One request at a time keeps about one of the ${cpus().length} CPUs busy (client, service and PostgreSQL take turns); a share well above that is other work on the host.`,
    '',
    row([`endpoint (p50 / p99 ms, n = ${RUNS})`, ...results.flatMap((r) => perVolume(`${label(r.invoices)} / ${label(r.payments)}`, `reads at ${label(r.invoices)}`)), ...rest.map((r) => `p99 ratio ${label(r.invoices)} / ${label(first.invoices)}`)]),
    row(['---', ...results.flatMap(() => perVolume('---', '---')), ...rest.map(() => '---')]),
  ];
  const over: string[] = [];
  const unlike: string[] = [];
  for (const s of first.samples) {
    const found = results.map((r) => r.samples.find((x) => x.endpoint === s.endpoint));
    const cells = found.flatMap((m) => perVolume(m ? `${m.p50} / ${m.p99}` : '', m?.servedBy ?? ''));
    const ratios = rest.map((r) => {
      const ratio = (r.samples.find((x) => x.endpoint === s.endpoint)?.p99 ?? NaN) / s.p99;
      if (ratio > 1.5) over.push(`\`${s.endpoint}\` at ${label(r.invoices)} (${ratio.toFixed(2)})`);
      return ratio > 1.5 ? `**${ratio.toFixed(2)}**` : ratio.toFixed(2);
    });
    const bytes = found.map((m) => m?.bytes ?? 0);
    // A count in the answer has more digits at a larger volume: the slack keeps that from counting.
    const alike = Math.max(...bytes) <= Math.max(Math.min(...bytes) * (1 + BYTES_TOLERANCE), Math.min(...bytes) + BYTES_SLACK);
    if (!alike) unlike.push(`\`${s.endpoint}\` (${bytes.join(' / ')} bytes)`);
    lines.push(row([`\`${s.endpoint}\`${alike ? '' : ' †'}`, ...cells, ...ratios]));
  }
  const extra = (name: string, value: (r: VolumeResult) => string) => lines.push(row([name, ...results.flatMap((r) => perVolume(value(r))), ...rest.map(() => '')]));
  extra('machine busy over the timed rounds (%, min / median / max of the rows, the same for every volume)', (r) => {
    const busy = r.samples.map((x) => x.machine.busyPct).sort((a, b) => a - b);
    return `${busy[0]} / ${percentile(busy, 0.5)} / ${busy.at(-1)}`;
  });
  extra('peak RSS of the service (MB)', (r) => String(r.peakRssMb));
  extra('seeding (s)', (r) => r.seedS.toFixed(0));
  if (REPLICA) extra('standby: base backup / replay (s)', (r) => `${r.standby?.baseBackupS.toFixed(0)} / ${r.standby?.replayS.toFixed(1)}`);
  lines.push('');
  if (rest.length > 0) lines.push(over.length === 0 ? `Every p99 is within 1.5x of its ${label(first.invoices)} figure.` : `Over 1.5x of the ${label(first.invoices)} p99: ${over.join(', ')}.`);
  if (unlike.length > 0) lines.push(`† The answers differ in size between volumes by more than ${BYTES_TOLERANCE * 100}%: ${unlike.join(', ')}.`);
  lines.push(...storageReport(results));
  return lines.join('\n');
}

async function main(): Promise<void> {
  const started = Date.now();
  execFileSync('npm', ['run', '--silent', 'build'], { stdio: 'inherit' });
  mkdirSync(OUT, { recursive: true });
  const primary = REPLICA ? await teardown.acquire('the primary cluster', startPrimary, (c) => c.destroy()) : undefined;
  const cluster = primary?.value;
  const hook = await receiver();
  const closeHook = teardown.hold('the webhook receiver', () => new Promise<void>((resolve) => hook.server.close(() => resolve())));
  const releases: (() => Promise<void>)[] = [];
  const results: VolumeResult[] = [];
  try {
    if (cluster) console.log(`primary cluster of the bench's own on port ${cluster.port}`);
    const lanes: Lane[] = [];
    for (const volume of VOLUMES) {
      const { lane, release } = await prepareLane(volume, cluster, hook.url);
      lanes.push(lane);
      releases.push(release);
    }
    const dbName = (l: Lane) => new URL(l.ports.databaseUrl).pathname.slice(1);
    let standby: { results: VolumeResult['standby']; url: (l: Lane) => string } | undefined;
    if (cluster && lanes[0]) {
      // One standby of the whole cluster, made once every volume is on the primary, as a replica of a production primary holds every database.
      const held = await teardown.acquire('the standby', () => startStandby(cluster, dbName(lanes[0] as Lane)), (s) => s.standby.destroy());
      releases.push(held.release);
      const { standby: replica, baseBackupS, replayS } = held.value;
      console.log(`\nstandby: base backup ${baseBackupS.toFixed(0)} s, replayed up to the primary ${replayS.toFixed(1)} s later`);
      standby = { results: { baseBackupS, replayS }, url: (l) => replica.url(dbName(l)) };
    }
    console.log(`\n== timed in lockstep: ${lanes.map((l) => label(l.volume.invoices)).join(', ')}`);
    const peak = await measure(lanes, standby?.url);
    if (!cluster) for (const lane of lanes) await writePlans(lane);
    for (const lane of lanes) {
      const { volume, seedS, history, samples, storage } = lane;
      results.push({ ...volume, seedS, history, samples, peakRssMb: peak.get(lane) ?? 0, storage, ...(standby ? { standby: standby.results } : {}) });
    }
  } finally {
    for (const release of releases.reverse()) await release();
    await closeHook();
    await primary?.release();
  }
  const md = report(results);
  const name = REPLICA ? 'scale-replica' : 'scale';
  writeFileSync(join(OUT, `${name}.md`), `${md}\n`);
  const settings = REPLICA ? { replica: { maxLagMs: 'the service default (REPLICA_MAX_LAG_MS 2000)', server: 'own primary and standby: fsync and synchronous_commit on, autovacuum off' } } : {};
  writeFileSync(join(OUT, `${name}.json`), JSON.stringify({ date: new Date().toISOString(), node: process.version, runs: RUNS, warmup: WARMUP, apiNodeFlags: START_PROD_NODE_FLAGS, ...settings, results }, null, 2));
  console.log(`\n${md}\n\nbench:scale took ${Math.round((Date.now() - started) / 1000)} s; results in ${OUT}/${name}.{md,json}`);
}

await teardown.run(main);
