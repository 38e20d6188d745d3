/**
 * The partner's wait after paying. First the lifecycle peak: partners pay as fast as they can
 * while the simulator approves each payment a short while after it is submitted, and the peak is
 * the payments carried through the whole lifecycle (paid, confirmed, webhook delivered) per
 * second. Then partners pay at a steady rate (half that peak unless told) and the bench measures,
 * per ministry system, approval -> `confirmed` in the database and approval -> `payment.confirmed`
 * at a real webhook receiver; a last phase makes one system's status checks slow, and the other
 * systems' figures must not move. Part of `npm run bench` (`--endpoints=lifecycle` runs it alone).
 */
import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { request } from 'undici';
import { loadConfig } from '../src/config/config.js';
import { cpuMsOf, createPartner, fetchJson as json, freePort, freshDatabase, hookReceiver, percentile, postgresCpuMs, startProcess, startRoles, UNLIMITED_RATES, type Proc, type ServiceRole } from './bench-processes.js';

const SOURCES = ['mof', 'etax', 'police'] as const;
type Source = (typeof SOURCES)[number];
const APPROVE_AFTER_MS = 200;
const PARTNERS = 8;
const SLOW_SOURCE: Source = 'etax';
const SLOW_STATUS_MS = 1500;
const ADMIN_TOKEN = 'bench-lifecycle-admin-token';
const SLOW_PHASE = `${SLOW_SOURCE} status checks take ${SLOW_STATUS_MS} ms`;
/** CONFIRM_CONCURRENCY_MAX_PER_SOURCE of the split layout's worker, as compose.yaml sets it. */
const WORKER_MAX_PER_SOURCE = 256;

/** From now on the slow system answers status checks after SLOW_STATUS_MS. */
async function slowDown(simUrl: string): Promise<void> {
  await json(`${simUrl}/__control/faults`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ source: SLOW_SOURCE, mode: 'slow', delayMs: SLOW_STATUS_MS, operation: 'status' }) });
}

export interface LifecycleRow {
  phase: string;
  source: Source;
  payments: number;
  /** Approvals that never reached `confirmed` or the receiver by the end of the wait. */
  missing: number;
  dbP50: number;
  dbP99: number;
  webhookP50: number;
  webhookP99: number;
}

export interface LifecycleResult {
  /** Payments carried through the whole lifecycle per second, paying flat out. */
  peak: number;
  /** Committed database transactions per payment over its lifecycle, at the peak. */
  transactionsPerPayment: number;
  rate: number;
  durationS: number;
  confirmPollMs: number;
  webhookPollMs: number;
  rows: LifecycleRow[];
}

/** How the service runs: one `all` process, or `apis` processes with PROCESS_ROLE=api beside one worker. */
export interface LifecycleLayout {
  apis: number;
  worker: boolean;
}

/** How the service is started: on a scratch database of `pgUrl`'s server, from these entries. */
export interface LifecycleServiceSettings {
  pgUrl: string;
  /** One `all` process unless told. */
  layout?: LifecycleLayout;
  apiEntry: string;
  simulatorEntry: string;
  apiNodeFlags: string[];
}

interface Settings extends LifecycleServiceSettings {
  /** Payments per second over all partners in the steady phases; half the measured peak when null. A split layout runs only the steady phase, at `rate`. */
  rate: number | null;
  durationS: number;
}

const PEAK_PER_PARTNER = 400;
/**
 * Payments per partner of lifecyclePeak's warm-up burst. With 100, V8 still optimized about 300
 * functions of the API process for the first time during the measured burst (per-payment code
 * among them: the QR's payload and image, the payment's answer), and the simulator and this
 * process were as cold; see bench/README.md, "Readings of 2026-11-29, eighth".
 */
const PEAK_WARMUP_PER_PARTNER = 300;
export const PEAK_WARMUP_PAYMENTS = PEAK_WARMUP_PER_PARTNER * PARTNERS;
/** The peak's payers, each paying again as soon as its payment is accepted. */
export const PEAK_CONCURRENCY = 32;

function invoicesOf(group: string, partner: number, count: number) {
  return Array.from({ length: count }, (_, i) => ({
    source: SOURCES[i % 3],
    refNum: `LC${group}-${partner}-${i}`,
    description: 'Lifecycle invoice',
    amount: 1000 + (i % 500),
    status: 'open',
    dueDate: '2099-01-01T00:00:00.000Z',
    issuedAt: '2026-01-01T00:00:00.000Z',
    payer: { register: `LC${group}-${partner}`, name: 'Lifecycle Payer' },
    payee: { id: 'ORG-1', name: 'Org' },
  }));
}

/** The simulator starts from a fixture file; each phase adds its own invoices through its control API. */
function emptyFixtures(): string {
  const path = join(tmpdir(), `lifecycle-fixtures-${process.pid}.json`);
  writeFileSync(path, JSON.stringify({ invoices: invoicesOf('seed', 0, 1) }));
  return path;
}


interface Partner {
  key: string;
}

async function setUpPartners(api: string, adminUrl: string, hookUrl: string): Promise<Partner[]> {
  const partners: Partner[] = [];
  for (let p = 0; p < PARTNERS; p++) {
    const key = (await createPartner(adminUrl, ADMIN_TOKEN, `Lifecycle ${p}`)).apiKey;
    await json(`${api}/webhooks`, {
      method: 'POST',
      headers: { 'x-api-key': key, 'content-type': 'application/json' },
      body: JSON.stringify({ url: hookUrl, secret: 'lifecycle-bench-secret-0123', events: ['payment.confirmed'] }),
    });
    partners.push({ key });
  }
  return partners;
}

/** A phase's invoices at the simulator, found by each partner's search (which gives it access); ids per partner, in order. */
async function loadGroup(api: string, simUrl: string, partners: Partner[], group: string, perPartner: number): Promise<string[][]> {
  const ids: string[][] = [];
  for (const [p, partner] of partners.entries()) {
    await json(`${simUrl}/__control/invoices`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ invoices: invoicesOf(group, p, perPartner) }) });
    const found = await json(`${api}/invoices?ttd=LC${group}-${p}`, { headers: { 'x-api-key': partner.key } });
    ids.push((found.invoices as { id: string }[]).map((i) => i.id));
  }
  return ids;
}

/**
 * undici's `request` rather than `fetch`: the payers share the two cores with the service, and
 * fetch's WHATWG streams and headers cost several times the CPU a payment's request needs.
 */
async function pay(api: string, partner: Partner, invoiceId: string | undefined): Promise<boolean> {
  const res = await request(`${api}/payments`, { method: 'POST', headers: { 'x-api-key': partner.key, 'content-type': 'application/json' }, body: JSON.stringify({ invoiceId }) });
  await res.body.arrayBuffer();
  return res.statusCode === 201;
}

/** Closed loop: PEAK_CONCURRENCY payers, each paying again as soon as its payment is accepted. */
async function payFlatOut(apis: string[], partners: Partner[], invoices: string[][]): Promise<number> {
  const queue = partners.flatMap((partner, p) => (invoices[p] ?? []).map((id) => ({ partner, id })));
  let next = 0;
  let failed = 0;
  await Promise.all(
    Array.from({ length: PEAK_CONCURRENCY }, async () => {
      while (next < queue.length) {
        const n = next++;
        const item = queue[n] as { partner: Partner; id: string };
        if (!(await pay(apis[n % apis.length] as string, item.partner, item.id))) failed++;
      }
    }),
  );
  return failed;
}

/** Open loop: every 10 ms, the payments due by then, round robin over the partners. */
async function payAtRate(apis: string[], partners: Partner[], invoices: string[][], rate: number, durationS: number): Promise<number> {
  const total = Math.floor(rate * durationS);
  const start = Date.now();
  const inFlight: Promise<void>[] = [];
  let sent = 0;
  let failed = 0;
  while (sent < total) {
    const due = Math.min(total, Math.floor(((Date.now() - start) / 1000) * rate));
    for (; sent < due; sent++) {
      const p = sent % partners.length;
      const invoiceId = invoices[p]?.[Math.floor(sent / partners.length)];
      inFlight.push(
        pay(apis[sent % apis.length] as string, partners[p] as Partner, invoiceId).then((ok) => {
          if (!ok) failed++;
        }),
      );
    }
    await sleep(10);
  }
  await Promise.all(inFlight);
  return failed;
}

interface Approval {
  paymentId: string;
  source: Source;
  at: number;
}

async function approvals(simUrl: string, since: number): Promise<Approval[]> {
  const listed = await json(`${simUrl}/__control/payments`);
  return (listed.payments as { paymentId: string; source: Source; confirmedAt: string | null }[])
    .filter((p) => p.confirmedAt && Date.parse(p.confirmedAt) >= since)
    .map((p) => ({ paymentId: p.paymentId, source: p.source, at: Date.parse(p.confirmedAt as string) }));
}

interface Outcome {
  approved: Approval[];
  confirmedAt: Map<string, number>;
  arrivals: Map<string, number>;
}

/**
 * Waits until `expected` webhooks have arrived since `since`, or until `deadline`, reading only the
 * bench's own receiver: a poll of the simulator's control API lists every payment it holds,
 * thousands at the peak, and the simulator and the bench share the cores with the service they
 * measure.
 */
async function arrivedSince(arrivals: Map<string, number>, since: number, expected: number, deadline: number): Promise<void> {
  while (Date.now() < deadline) {
    let arrived = 0;
    for (const at of arrivals.values()) if (at >= since) arrived++;
    if (arrived >= expected) return;
    await sleep(200);
  }
}

/** Waits until every payment approved since `since` is confirmed and delivered, or 120 s, asking the simulator once `expected` webhooks have arrived. */
async function collect(simUrl: string, dbUrl: string, arrivals: Map<string, number>, since: number, expected: number): Promise<Outcome> {
  const deadline = Date.now() + 120_000;
  await arrivedSince(arrivals, since, expected, deadline);
  const client = new pg.Client({ connectionString: dbUrl });
  await client.connect();
  try {
    let approved: Approval[] = [];
    let confirmedAt = new Map<string, number>();
    // At least one look, however late: the outcome is what there is by the deadline.
    do {
      approved = await approvals(simUrl, since);
      const { rows } = await client.query<{ id: string; at: Date }>(`SELECT id, updated_at AS at FROM payments WHERE status = 'confirmed' AND id = ANY($1::uuid[])`, [approved.map((a) => a.paymentId)]);
      confirmedAt = new Map(rows.map((r) => [r.id, r.at.getTime()]));
      if (approved.length > 0 && approved.every((a) => confirmedAt.has(a.paymentId) && arrivals.has(a.paymentId))) break;
      // Polled gently: the bench shares the machine with the service it measures.
      await sleep(500);
    } while (Date.now() < deadline);
    return { approved, confirmedAt, arrivals };
  } finally {
    await client.end();
  }
}

function rowsOf(o: Outcome, phase: string): LifecycleRow[] {
  return SOURCES.map((source) => {
    const mine = o.approved.filter((a) => a.source === source);
    const after = (at: Map<string, number>) => mine.flatMap((a) => (at.has(a.paymentId) ? [(at.get(a.paymentId) as number) - a.at] : [])).sort((x, y) => x - y);
    const db = after(o.confirmedAt);
    const hook = after(o.arrivals);
    return {
      phase,
      source,
      payments: mine.length,
      missing: mine.length - Math.min(db.length, hook.length),
      dbP50: percentile(db, 0.5),
      dbP99: percentile(db, 0.99),
      webhookP50: percentile(hook, 0.5),
      webhookP99: percentile(hook, 0.99),
    };
  });
}

/** Rows a table's statements inserted, updated and deleted. */
export interface TableWrites {
  inserted: number;
  updated: number;
  deleted: number;
}

/** What the database has done so far: committed transactions (each autocommit statement is one) and rows written per table. */
export interface DatabaseActivity {
  transactions: number;
  /** Buffers the database's statements found in shared buffers, and those read from outside them (the OS's cache or the disk). */
  blocks: { hit: number; read: number };
  tables: Record<string, TableWrites>;
}

export async function databaseActivity(dbUrl: string): Promise<DatabaseActivity> {
  const client = new pg.Client({ connectionString: dbUrl });
  await client.connect();
  try {
    const { rows } = await client.query<{ n: string; hit: string; read: string }>('SELECT xact_commit AS n, blks_hit AS hit, blks_read AS read FROM pg_stat_database WHERE datname = current_database()');
    const tables = await client.query<{ name: string; ins: string; upd: string; del: string }>('SELECT relname AS name, n_tup_ins AS ins, n_tup_upd AS upd, n_tup_del AS del FROM pg_stat_user_tables');
    return {
      transactions: Number(rows[0]?.n ?? 0),
      blocks: { hit: Number(rows[0]?.hit ?? 0), read: Number(rows[0]?.read ?? 0) },
      tables: Object.fromEntries(tables.rows.map((t) => [t.name, { inserted: Number(t.ins), updated: Number(t.upd), deleted: Number(t.del) }])),
    };
  } finally {
    await client.end();
  }
}

/** Per unit of `per` (a payment, a pgbench life), what the database did between two readings; tables nothing wrote are left out. */
export function activityPer(before: DatabaseActivity, after: DatabaseActivity, per: number): DatabaseActivity {
  const tables: Record<string, TableWrites> = {};
  for (const [name, a] of Object.entries(after.tables)) {
    const b = before.tables[name] ?? { inserted: 0, updated: 0, deleted: 0 };
    const w = { inserted: (a.inserted - b.inserted) / per, updated: (a.updated - b.updated) / per, deleted: (a.deleted - b.deleted) / per };
    if (w.inserted || w.updated || w.deleted) tables[name] = w;
  }
  const blocks = { hit: (after.blocks.hit - before.blocks.hit) / per, read: (after.blocks.read - before.blocks.read) / per };
  return { transactions: (after.transactions - before.transactions) / per, blocks, tables };
}

/**
 * A backend reports its counts when a transaction ends at least a second after its last report,
 * and an idle one only after 10 s of idleness; the pool's connections go idle after the burst.
 */
const STATS_SETTLE_MS = 11_000;

/** The lifecycle peak, and what the database did per payment carried through it. */
export interface LifecyclePeak {
  peak: number;
  /** Committed database transactions per payment over its lifecycle, at the peak. */
  transactionsPerPayment: number;
  /** Payments carried through the whole lifecycle in the phase. */
  payments: number;
  /** Payments accepted per second while the burst's payers paid: its `POST /payments` peak. */
  acceptedPerS: number;
  /** Per payment: transactions and rows written per table, background work included. */
  perPayment: DatabaseActivity;
  /** CPU time per payment in ms, by who spent it, from the first payment until every webhook was counted. */
  cpuPerPayment: PeakCpu;
}

/** CPU time of the lifecycle peak in ms, by process. */
export interface PeakCpu {
  /** The service's processes: one `all`, or the api processes and the worker. */
  service: number;
  /** Every PostgreSQL process on the machine. */
  postgres: number;
  /** The ministries, and the bench's polls of the simulator's control API for approvals. */
  simulator: number;
  /** This process: the payers, the webhook receiver, the polling. */
  bench: number;
}

function peakCpu(ctx: PhaseContext): PeakCpu {
  const own = process.cpuUsage();
  return { service: cpuMsOf(ctx.pids.service), postgres: postgresCpuMs(), simulator: cpuMsOf([ctx.pids.simulator]), bench: (own.user + own.system) / 1000 };
}

/**
 * Payments carried through the whole lifecycle per second: a flat-out burst, from its first
 * payment to the last of its webhooks. The burst's last payments still wait for their approval
 * and first check, so the figure errs low.
 */
async function measurePeak(ctx: PhaseContext): Promise<LifecyclePeak> {
  const invoices = await loadGroup(ctx.apis[0] as string, ctx.simUrl, ctx.partners, 'peak', PEAK_PER_PARTNER);
  // The invoices' writes reported first, so they are not counted as the payments'.
  await sleep(STATS_SETTLE_MS);
  const before = await databaseActivity(ctx.dbUrl);
  const since = Date.now();
  const cpu0 = peakCpu(ctx);
  const failed = await payFlatOut(ctx.apis, ctx.partners, invoices);
  const paidIn = Date.now() - since;
  if (failed > 0) console.log(`lifecycle: ${failed} payments were not accepted in the peak phase`);
  const o = await collect(ctx.simUrl, ctx.dbUrl, ctx.arrivals, since, invoices.flat().length - failed);
  const done = o.approved.filter((a) => o.arrivals.has(a.paymentId));
  const last = Math.max(...done.map((a) => o.arrivals.get(a.paymentId) as number));
  const peak = Math.floor(done.length / ((last - since) / 1000));
  const cpu1 = peakCpu(ctx);
  const per = (k: keyof PeakCpu) => (cpu1[k] - cpu0[k]) / Math.max(1, done.length);
  const cpuPerPayment: PeakCpu = { service: per('service'), postgres: per('postgres'), simulator: per('simulator'), bench: per('bench') };
  // The load generator, the webhook receiver and the simulator share the machine with the service:
  // their CPU is taken from it.
  const cpuText = Object.entries(cpuPerPayment).map(([k, v]) => `${k} ${v.toFixed(2)}`).join(', ');
  console.log(`lifecycle  peak: the payments were accepted in ${paidIn} ms; CPU ms a payment: ${cpuText}`);
  // When the burst's payments reached each stage, from its first payment: where the peak's time went.
  const spread = (times: number[]) => {
    const sorted = times.map((t) => t - since).sort((a, b) => a - b);
    const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? NaN;
    return `${at(0)} / ${at(0.1)} / ${at(0.5)} / ${at(0.9)} / ${at(1)} ms`;
  };
  console.log(
    `lifecycle  peak: from ${new Date(since).toISOString()}, first / 10% / 50% / 90% / last, approved ${spread(done.map((a) => a.at))}, confirmed ${spread([...o.confirmedAt.values()])}, webhook ${spread(done.map((a) => o.arrivals.get(a.paymentId) as number))}`,
  );
  await sleep(STATS_SETTLE_MS);
  const perPayment = activityPer(before, await databaseActivity(ctx.dbUrl), done.length);
  console.log(`lifecycle  peak: ${done.length} payments paid, confirmed and delivered in ${last - since} ms: ${peak}/s; ${perPayment.transactions.toFixed(1)} database transactions per payment`);
  const acceptedPerS = (invoices.flat().length - failed) / (paidIn / 1000);
  return { peak, transactionsPerPayment: perPayment.transactions, payments: done.length, acceptedPerS, perPayment, cpuPerPayment };
}

interface PhaseContext {
  /** Every API process's base URL; payments go round robin over them. */
  apis: string[];
  simUrl: string;
  dbUrl: string;
  partners: Partner[];
  arrivals: Map<string, number>;
  /** The service's processes and the simulator, whose CPU time the peak reads. */
  pids: { service: number[]; simulator: number };
}

async function steadyPhase(ctx: PhaseContext, group: string, label: string, rate: number, durationS: number): Promise<LifecycleRow[]> {
  const invoices = await loadGroup(ctx.apis[0] as string, ctx.simUrl, ctx.partners, group, Math.ceil((rate * durationS) / PARTNERS) + 1);
  const since = Date.now();
  const failed = await payAtRate(ctx.apis, ctx.partners, invoices, rate, durationS);
  if (failed > 0) console.log(`lifecycle: ${failed} payments were not accepted in phase "${label}"`);
  const rows = rowsOf(await collect(ctx.simUrl, ctx.dbUrl, ctx.arrivals, since, Math.floor(rate * durationS) - failed), label);
  for (const r of rows) console.log(`lifecycle  ${label.padEnd(36)} ${r.source.padEnd(6)} ${r.payments} payments, approval->confirmed p50 ${r.dbP50} p99 ${r.dbP99} ms, approval->webhook p50 ${r.webhookP50} p99 ${r.webhookP99} ms, missing ${r.missing}`);
  return rows;
}

/**
 * The service as this bench runs it, on a scratch database: the simulator, the service's
 * processes in `s.layout`, the partners and their webhooks at the bench's receiver. `run` gets
 * them ready; everything is stopped and the database dropped after it, even when it fails.
 * Null when PostgreSQL cannot be reached.
 */
async function withLifecycleService<T>(s: LifecycleServiceSettings, run: (ctx: PhaseContext, layout: LifecycleLayout) => Promise<T>): Promise<T | null> {
  const db = await freshDatabase(s.pgUrl, 'bench_lifecycle');
  if (!db) return null;
  // When each payment's `payment.confirmed` arrives.
  const hook = await hookReceiver((body) => (body.event === 'payment.confirmed' ? (body.data.id ?? null) : null));
  const layout = s.layout ?? { apis: 1, worker: false };
  const roles: ServiceRole[] = layout.worker ? [...Array.from({ length: layout.apis }, () => 'api' as const), 'worker'] : ['all'];
  // The rate is spread over a few partners; the per-key limits would turn it into 429s.
  const extra = { ...UNLIMITED_RATES, MINISTRY_TIMEOUT_MS: '5000' };
  let sim: Proc | null = null;
  let procs: Proc[] = [];
  try {
    const simPort = await freePort();
    sim = await startProcess([s.simulatorEntry], { SIMULATOR_PORT: String(simPort), SIMULATOR_FIXTURES: emptyFixtures(), SIMULATOR_AUTO_APPROVE_MS: String(APPROVE_AFTER_MS), LOG_LEVEL: 'warn' }, `http://127.0.0.1:${simPort}/mof/api/invoices/NOPE`, ['--no-memory-reducer']);
    const simUrl = `http://127.0.0.1:${simPort}`;
    // The worker gets the cap compose.yaml gives it: it serves no partner, so its checks take no request's CPU.
    const roleExtra = { worker: { CONFIRM_CONCURRENCY_MAX_PER_SOURCE: String(WORKER_MAX_PER_SOURCE) } };
    const started = await startRoles(roles, { ...s, adminToken: ADMIN_TOKEN, simulatorUrl: simUrl, databaseUrl: db.url, extra, roleExtra });
    procs = started.procs;
    const { apis, adminUrl } = started;
    const partners = await setUpPartners(apis[0] as string, adminUrl, hook.url);
    const pids = { service: procs.map((p) => p.child.pid ?? 0), simulator: sim.child.pid ?? 0 };
    return await run({ apis, simUrl, dbUrl: db.url, partners, arrivals: hook.arrivals, pids }, layout);
  } finally {
    for (const p of procs.reverse()) await p.stop();
    await sim?.stop();
    hook.server.close();
    await db.drop();
  }
}

/**
 * A smaller burst through the whole lifecycle, waited out to its last webhook: the measured burst
 * then meets code V8 has optimized already, as pgbench meets a PostgreSQL its warm-up has warmed.
 * In one process, a fresh service's first burst cost it 18% more CPU per payment than its second
 * (one pair of runs); V8's optimizing compiler took 12% of its samples in the first.
 */
async function warmUp(ctx: PhaseContext): Promise<void> {
  const invoices = await loadGroup(ctx.apis[0] as string, ctx.simUrl, ctx.partners, 'warm', PEAK_WARMUP_PER_PARTNER);
  const since = Date.now();
  const failed = await payFlatOut(ctx.apis, ctx.partners, invoices);
  await collect(ctx.simUrl, ctx.dbUrl, ctx.arrivals, since, invoices.flat().length - failed);
}

/**
 * The lifecycle peak alone, measured as the bench's first phase measures it but after a warm-up
 * burst, on a scratch database: one `all` process unless `s.layout` says otherwise.
 */
export function lifecyclePeak(s: LifecycleServiceSettings): Promise<LifecyclePeak | null> {
  return withLifecycleService(s, async (ctx) => {
    await warmUp(ctx);
    return measurePeak(ctx);
  });
}

export function lifecycleBench(s: Settings): Promise<LifecycleResult | null> {
  return withLifecycleService(s, async (ctx, layout) => {
    // The service runs with the defaults, which the budget below is made of.
    const { confirmPollMs, webhookPollMs } = loadConfig({});
    if (layout.worker) {
      const rate = s.rate ?? 1;
      const name = `${layout.apis} api + 1 worker`;
      const rows = await steadyPhase(ctx, 'split', name, rate, s.durationS);
      await slowDown(ctx.simUrl);
      rows.push(...(await steadyPhase(ctx, 'split-slow', `${name}, ${SLOW_PHASE}`, rate, s.durationS)));
      return { peak: 0, transactionsPerPayment: 0, rate, durationS: s.durationS, confirmPollMs, webhookPollMs, rows };
    }
    const { peak, transactionsPerPayment } = await measurePeak(ctx);
    const rate = s.rate ?? Math.max(1, Math.floor(peak / 2));
    const rows = await steadyPhase(ctx, 'steady', 'all systems answering', rate, s.durationS);
    await slowDown(ctx.simUrl);
    rows.push(...(await steadyPhase(ctx, 'slow', SLOW_PHASE, rate, s.durationS)));
    return { peak, transactionsPerPayment, rate, durationS: s.durationS, confirmPollMs, webhookPollMs, rows };
  });
}

export function lifecycleTable(r: LifecycleResult, payPeak: number | null): string {
  const budget = r.confirmPollMs + r.webhookPollMs + 1000;
  const alone = payPeak ? ` (\`POST /payments\` alone, with no approvals, peaked at ${payPeak}/s above)` : '';
  return [
    `Lifecycle: paying flat out while the simulator approves each payment ${APPROVE_AFTER_MS} ms after submit, the service carried ${r.peak} payments/s through the whole lifecycle${alone}, at ${r.transactionsPerPayment.toFixed(1)} database transactions per payment. ` +
      `Steady phases at ${r.rate} payments/s for ${r.durationS} s each; budget for approval -> webhook p99: CONFIRM_POLL_MS + WEBHOOK_POLL_MS + 1 s = ${budget} ms:`,
    '',
    '| phase | system | payments | approval -> confirmed p50 / p99 ms | approval -> webhook p50 / p99 ms | missing |',
    '|---|---|---|---|---|---|',
    ...r.rows.map((x) => `| ${x.phase} | ${x.source} | ${x.payments} | ${x.dbP50} / ${x.dbP99} | ${x.webhookP50} / ${x.webhookP99} | ${x.missing} |`),
  ].join('\n');
}

/** The split layout's steady phase, at the single process's steady rate. */
export function splitLifecycleTable(r: LifecycleResult): string {
  return [
    `Lifecycle with PROCESS_ROLE split: 2 \`api\` processes (payments round robin) and 1 \`worker\` (CONFIRM_CONCURRENCY_MAX_PER_SOURCE=${WORKER_MAX_PER_SOURCE}, as compose.yaml runs it), at ${r.rate} payments/s for ${r.durationS} s each phase, the same rate as the steady phase above:`,
    '',
    '| phase | system | payments | approval -> confirmed p50 / p99 ms | approval -> webhook p50 / p99 ms | missing |',
    '|---|---|---|---|---|---|',
    ...r.rows.map((x) => `| ${x.phase} | ${x.source} | ${x.payments} | ${x.dbP50} / ${x.dbP99} | ${x.webhookP50} / ${x.webhookP99} | ${x.missing} |`),
  ].join('\n');
}
