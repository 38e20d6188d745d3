/**
 * `npm run bench:ceiling`: what share of PostgreSQL's own ceiling the service's lifecycle peak is,
 * for the same SQL. One payment's life as the service issues it (bench/ceiling/*.sql, one file
 * per transaction, each naming the repository function it mirrors) runs under pgbench, flat out,
 * on a scratch database migrated by the service's own migrations; then the lifecycle bench's peak
 * phase (bench/lifecycle.bench.ts) measures the service on the same PostgreSQL, as one process and
 * as compose.yaml splits it (2 `api` + 1 `worker`). The result goes to bench/results/ceiling.md
 * and .json.
 *
 * Needs PostgreSQL (`DATABASE_URL`, or `--pg=URL`; scratch databases are created and dropped) and
 * pgbench. `--duration=S` (pgbench's -T, 20), `--clients=N` (pgbench's -c, 10: the service's pool).
 * `--server=own` runs everything on a PostgreSQL cluster of the bench's own, started with
 * PostgreSQL's defaults (autovacuum on, as production runs it) and removed at the end, instead of
 * the given server. `--pgbench-only` runs pgbench's two runs back to back with nothing between
 * and prints them: what its own first run leaves the second, apart from what the service's do.
 */
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { createDatabase, migrateToLatest } from '../src/db/database.js';
import { canRunOwnCluster, createPgCluster, type PgCluster } from '../test/helpers/pg-cluster.js';
import { exitedChildrenCpuMs, freePort, freshDatabase, observed, postgresCpuMs, type Machine, START_PROD_NODE_FLAGS, benchFlag } from './bench-processes.js';
import { activityPer, databaseActivity, lifecyclePeak, PEAK_CONCURRENCY, PEAK_WARMUP_PAYMENTS, type DatabaseActivity, type LifecyclePeak, type PeakCpu, type TableWrites } from './lifecycle.bench.js';

const GIVEN_PG_URL = benchFlag('pg') ?? process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const OWN_SERVER = benchFlag('server') === 'own';
const PGBENCH_ONLY = process.argv.includes('--pgbench-only');
const DURATION_S = Number(benchFlag('duration') ?? 20);
/** The service's pool (src/db/database.ts): at most this many of its statements run at once. */
const CLIENTS = Number(benchFlag('clients') ?? 10);
const THREADS = 2;
/** pgbench's clients and threads, the same for the warm-up and the measured runs. */
const CLIENT_ARGS = ['-c', String(CLIENTS), '-j', String(THREADS)];
const SPLIT_LAYOUT = { apis: 2, worker: true };
const SPLIT_LAYOUT_NAME = '2 api + 1 worker';
const PGBENCH = process.env.PGBENCH ?? '/usr/bin/pgbench';
const SCRIPT_DIR = 'bench/ceiling';
/** The service from source through tsx, with the Node flags `npm run start:prod` gives it, as bench:recover runs it. */
const API_ENTRY = 'src/bin/api.ts';
const SIMULATOR_ENTRY = 'simulator/bin/simulator.ts';
/** Invoices per client for one pgbench run: more than a client pays in it at 200 lives a second. */
const INVOICES_PER_RUN = DURATION_S * 200;
/** Lives per client of the warm-up before the first measured run. */
const WARM_UP_LIVES = 150;
/** pgbench runs before and after the service's and the warm-up, each on invoices of its own, and one more invoice for the check. */
const INVOICES_PER_CLIENT = 2 * INVOICES_PER_RUN + WARM_UP_LIVES + 1;

/** One transaction of the life: its script, and what the service issues for it per payment. */
interface LifeStep {
  file: string;
  name: string;
  /** The service's statements and round trips for this step of one payment's life. */
  service: string;
  /** A step of `POST /payments` (the create-only life runs these alone). */
  create?: true;
}

const LIFE: LifeStep[] = [
  { file: '01-find-invoice.sql', name: 'create: the partner\'s invoice', service: '1 statement, 1 round trip (InvoiceRepository.findForPartner)', create: true },
  { file: '02-insert-pending.sql', name: 'create: pending payment holding its invoice', service: '1 statement, 1 round trip (PaymentRepository.insertPending)', create: true },
  { file: '03-mark-submitted.sql', name: 'submit: submitted + event', service: '1 statement, 1 round trip (PaymentRepository.markSubmitted)', create: true },
  {
    file: '04-claim-check.sql',
    name: 'confirmation: claim of the check',
    service: 'shared: 1 claim per pass (every CONFIRM_POLL_MS / 4) for every due payment, after 1 claim of owed ministry cancellations per pass; a payment checked before its approval is rescheduled (1 more) and claimed again',
  },
  {
    file: '05-mark-confirmed.sql',
    name: 'confirmation: nothing left owing, so confirmed + invoice paid + event + delivery',
    service: '1 statement, 1 round trip (PaymentRepository.markConfirmedIfSettled)',
  },
  { file: '06-claim-delivery.sql', name: 'delivery: claim', service: 'shared: 1 claim per pass and lane (normal, slow) for every due delivery, at least every WEBHOOK_POLL_MS' },
  { file: '07-finish-delivery.sql', name: 'delivery: attempt logged + delivered', service: '1 statement, 1 round trip (WebhookDeliveryRepository.finish)' },
];

/** SQL commands in a pgbench script: each ends with `;` or `\gset` (comments and meta-commands are none). */
function commandsIn(file: string): number {
  const lines = readFileSync(join(SCRIPT_DIR, file), 'utf8').split('\n').filter((l) => !l.trim().startsWith('--') && !l.trim().startsWith('\\'));
  return lines.filter((l) => /;\s*$/.test(l) || /\\gset\b/.test(l)).length;
}

/** `POST /payments`'s part of the life: find the invoice, hold it, submit with its event. */
const CREATE_LIFE = LIFE.filter((s) => s.create);

/** A life as one pgbench script: the client's setup, then each of `steps`' transactions in order. */
function lifeScript(steps: LifeStep[], name: string): string {
  const files = readdirSync(SCRIPT_DIR).filter((f) => f.endsWith('.sql')).sort();
  const missing = LIFE.filter((s) => !files.includes(s.file));
  if (missing.length > 0) throw new Error(`missing scripts: ${missing.map((s) => s.file).join(', ')}`);
  const path = join(tmpdir(), `ceiling-${name}-${process.pid}.sql`);
  const chosen = files.filter((f) => f === '00-client.sql' || steps.some((s) => s.file === f));
  writeFileSync(path, chosen.map((f) => readFileSync(join(SCRIPT_DIR, f), 'utf8')).join('\n'));
  return path;
}

async function withClient<T>(url: string, run: (c: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await run(client);
  } finally {
    await client.end();
  }
}

/**
 * One partner per pgbench client ('ceiling N', N its client id) with a webhook for
 * `payment.confirmed`, as the lifecycle bench's partners have, and its invoices with ids made
 * from `N * 10^7 + n` (00-client.sql's invoice_key), from the client's ministry system, each
 * already shown to the partner.
 */
async function seed(url: string): Promise<void> {
  await withClient(url, async (c) => {
    await c.query(`INSERT INTO partners (name, qr_standard, environment) SELECT 'ceiling ' || n, 'qrpay', 'production' FROM generate_series(0, $1::int - 1) n`, [CLIENTS]);
    await c.query(`INSERT INTO webhooks (partner_id, url, events, secret_ciphertext)
      SELECT id, 'https://partner.example/hooks/payments', '["payment.confirmed"]', repeat('c', 96) FROM partners`);
    await c.query(
      `INSERT INTO invoices (id, source, ref_num, description, amount, billed_amount, status, due_date, issued_at, payer_register, payer_name, payee_id, payee_name)
       SELECT ('00000000-0000-4000-8000-' || lpad((c * 10000000 + n)::text, 12, '0'))::uuid, (ARRAY['mof', 'etax', 'police'])[c % 3 + 1],
         'CE' || c || '-' || n, 'Ceiling invoice', 1000 + n % 500, 1000 + n % 500, 'open', '2099-01-01', '2026-01-01', 'CE' || c, 'Ceiling Payer', 'ORG-1', 'Org'
       FROM generate_series(0, $1::int - 1) c, generate_series(1, $2::int) n`,
      [CLIENTS, INVOICES_PER_CLIENT],
    );
    await c.query(`INSERT INTO partner_invoices (partner_id, invoice_id)
      SELECT p.id, i.id FROM invoices i JOIN partners p ON p.name = 'ceiling ' || split_part(substr(i.ref_num, 3), '-', 1)`);
    await c.query('ANALYZE');
  });
}

interface PgbenchRun {
  code: number;
  out: string;
}

function pgbench(args: string[], url: string): Promise<PgbenchRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(PGBENCH, [...args, url], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code: code ?? 1, out }));
  });
}

const lifeArgs = (script: string, n: number) => ['-n', '-M', 'prepared', '-D', 'first=1', '-D', `n=${n}`, '-f', script];

/** What one life must leave: a condition on its one payment `p` and its invoice `i`, and what that says. */
interface LifeLeaves {
  sql: string;
  says: string;
}

/** The whole life: its payment confirmed after one claim, its invoice paid, both events, its delivery claimed once and delivered, the attempt logged. */
const WHOLE_LEAVES: LifeLeaves = {
  sql: `p.status = 'confirmed' AND p.check_attempts = 1 AND i.status = 'paid'
        AND (SELECT count(*) FROM payment_invoices pi WHERE pi.payment_id = p.id) = 1
        AND (SELECT array_agg(e.event ORDER BY e.event) FROM events e WHERE e.payment_id = p.id) = ARRAY['payment.confirmed', 'payment.submitted']
        AND (SELECT d.status = 'delivered' AND d.attempts = 1 FROM webhook_deliveries d JOIN events e ON e.id = d.event_id WHERE e.payment_id = p.id)
        AND (SELECT count(*) FROM webhook_attempts a JOIN webhook_deliveries d ON d.id = a.delivery_id JOIN events e ON e.id = d.event_id WHERE e.payment_id = p.id AND a.succeeded) = 1`,
  says: 'confirmed and delivered once',
};

/** The create-only life: its payment submitted, holding its still open invoice, with its one `payment.submitted` event. */
const CREATE_LEAVES: LifeLeaves = {
  sql: `p.status = 'submitted' AND i.status = 'open'
        AND (SELECT count(*) FROM payment_invoices pi WHERE pi.payment_id = p.id AND pi.active) = 1
        AND (SELECT array_agg(e.event) FROM events e WHERE e.payment_id = p.id) = ARRAY['payment.submitted']`,
  says: 'submitted',
};

/**
 * The check: one life by one client (on the invoice after the run's, so the run never meets it)
 * must run every statement without error and leave what each of its transactions writes.
 */
async function checkLife(url: string, script: string, leaves: LifeLeaves): Promise<void> {
  const run = await pgbench([...lifeArgs(script, INVOICES_PER_CLIENT - 1), '-c', '1', '-t', '1'], url);
  if (run.code !== 0) throw new Error(`the life's scripts failed against the migrated schema:\n${run.out}`);
  const state = await withClient(url, async (c) => (await c.query<{ ok: boolean }>(`SELECT ${leaves.sql} AS ok FROM payments p JOIN invoices i ON i.id = p.invoice_id`)).rows);
  if (state.length !== 1 || !state[0]?.ok) throw new Error(`the life's check left ${state.length} payments, not one ${leaves.says}:\n${run.out}`);
}

export interface CeilingPgbench {
  clients: number;
  threads: number;
  durationS: number;
  lives: number;
  /** pgbench's tps: one of its transactions is the whole life. */
  livesPerS: number;
  transactionsPerLife: number;
  /** Lives per second times the life's transactions. */
  transactionsPerS: number;
  /** Per life as PostgreSQL counted it: committed transactions and rows written per table. */
  perLife: DatabaseActivity;
  latencyMs: number;
  /** CPU time per life in ms: every PostgreSQL process, and pgbench itself. */
  cpuPerLife: { postgres: number; pgbench: number };
}

const numberAfter = (out: string, label: RegExp): number => Number(label.exec(out)?.[1] ?? NaN);

/** One flat-out run, its clients starting after the `skip`-th invoice of their own. */
async function runPgbench(url: string, script: string, skip: number, steps: LifeStep[]): Promise<CeilingPgbench> {
  // CHECKPOINT needs a superuser or pg_checkpoint: without either the run starts without one.
  await withClient(url, (c) => c.query('CHECKPOINT')).catch((err: Error) => console.log(`ceiling: no CHECKPOINT before the run (${err.message})`));
  const before = await databaseActivity(url);
  const cpu0 = { postgres: postgresCpuMs(), pgbench: exitedChildrenCpuMs() };
  const run = await pgbench([...lifeArgs(script, skip), ...CLIENT_ARGS, '-T', String(DURATION_S)], url);
  if (run.code !== 0) throw new Error(`pgbench failed (exit ${run.code}):\n${run.out}`);
  const lives = numberAfter(run.out, /number of transactions actually processed: (\d+)/);
  const failed = numberAfter(run.out, /number of failed transactions: (\d+)/);
  if (!(lives > 0) || failed !== 0) throw new Error(`pgbench: ${lives} lives, ${failed} failed:\n${run.out}`);
  // A backend reports its counts as it exits; pgbench's have.
  await sleep(1000);
  const cpuPerLife = { postgres: (postgresCpuMs() - cpu0.postgres) / lives, pgbench: (exitedChildrenCpuMs() - cpu0.pgbench) / lives };
  const perLife = activityPer(before, await databaseActivity(url), lives);
  const livesPerS = numberAfter(run.out, /tps = ([\d.]+)/);
  const transactionsPerLife = steps.reduce((n, s) => n + commandsIn(s.file), 0);
  const latencyMs = numberAfter(run.out, /latency average = ([\d.]+) ms/);
  return { clients: CLIENTS, threads: THREADS, durationS: DURATION_S, lives, livesPerS, transactionsPerLife, transactionsPerS: livesPerS * transactionsPerLife, perLife, latencyMs, cpuPerLife };
}

/**
 * Lives paid before the first measured run, on invoices of their own, and not measured. A prepared
 * statement's plan is kept for its connection's life, and plans made while the life's tables are
 * still empty touch about three times the buffers a statement (`markConfirmed` 374 against 115,
 * by pg_stat_statements). Two runs back to back on one database made 382 and 606 lives a second
 * without the warm-up, and 519 and 544 with it.
 */
async function warmUp(url: string, script: string): Promise<void> {
  const run = await pgbench([...lifeArgs(script, 2 * INVOICES_PER_RUN), ...CLIENT_ARGS, '-t', String(WARM_UP_LIVES)], url);
  if (run.code !== 0) throw new Error(`pgbench's warm-up failed (exit ${run.code}):\n${run.out}`);
}

/** One kind of life pgbench runs: its steps, its script's name and what one life must leave. */
interface LifeKind {
  name: string;
  steps: LifeStep[];
  leaves: LifeLeaves;
}
const WHOLE: LifeKind = { name: 'life', steps: LIFE, leaves: WHOLE_LEAVES };
const CREATE: LifeKind = { name: 'create', steps: CREATE_LIFE, leaves: CREATE_LEAVES };

/** A scratch database for pgbench: migrated by the service's migrations, seeded, one life checked on it, and warmed up. */
async function prepareCeiling(url: string, kind: LifeKind): Promise<string> {
  const kysely = await createDatabase({ databaseUrl: url, dataDir: '' });
  try {
    await migrateToLatest(kysely);
  } finally {
    await kysely.destroy();
  }
  await seed(url);
  const script = lifeScript(kind.steps, kind.name);
  await checkLife(url, script, kind.leaves);
  console.log(`ceiling: every statement of the ${kind.name} ran against the migrated schema`);
  await warmUp(url, script);
  // What autovacuum does to a long-lived database's tables, done once here, so on a server that
  // runs it the first measured run does not share the machine with its first passes over the seed.
  await withClient(url, (c) => c.query('VACUUM (ANALYZE)'));
  return script;
}

type Observed<T> = T & { machine: Machine };

export interface CeilingResult {
  date: string;
  cpus: number;
  node: string;
  postgres: string;
  /** Before and after the service's run. */
  pgbench: Observed<CeilingPgbench>[];
  /** The mean of the pgbench runs' lives per second: the ceiling. */
  livesPerS: number;
  /** One `all` process. */
  service: Observed<LifecyclePeak>;
  /** The service's payments/s over the ceiling. */
  share: number;
  /** 2 `api` processes and a `worker`, as compose.yaml runs the service. */
  split: Observed<LifecyclePeak>;
  splitShare: number;
  /** pgbench on `POST /payments`' statements alone (CREATE_LIFE), before and after the service's run. */
  create: Observed<CeilingPgbench>[];
  createLivesPerS: number;
  /** The peak's payments accepted per second (its `POST /payments` burst) over createLivesPerS. */
  createShare: number;
  splitCreateShare: number;
}

const fmt = (n: number, digits = 1) => n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });
const machineText = (m: Machine) => `load average ${fmt(m.load[0], 2)} -> ${fmt(m.load[1], 2)}, all CPUs ${m.busyPct}% busy`;

/**
 * CPU time per payment by process, against pgbench's per life: the two cores are shared, so what
 * the service's processes, the simulator and the load generator spend is taken from PostgreSQL.
 */
function cpuTable(r: CeilingResult): string[] {
  const ms = (n: number) => fmt(n, 2);
  const lives = r.pgbench.map((p) => p.cpuPerLife);
  const life = (k: 'postgres' | 'pgbench') => lives.map((c) => ms(c[k])).join(' / ');
  const sum = (c: PeakCpu) => c.service + c.postgres + c.simulator + c.bench;
  const one = r.service.cpuPerPayment;
  const split = r.split.cpuPerPayment;
  return [
    `| CPU ms | service, one process | service, ${SPLIT_LAYOUT_NAME} | pgbench, per life (before / after) |`,
    '|---|---|---|---|',
    `| PostgreSQL's processes | ${ms(one.postgres)} | ${ms(split.postgres)} | ${life('postgres')} |`,
    `| the service's processes | ${ms(one.service)} | ${ms(split.service)} | - |`,
    `| the simulator (the ministries, and the bench's polls of its control API) | ${ms(one.simulator)} | ${ms(split.simulator)} | - |`,
    `| the load generator (the bench's payers and webhook receiver; pgbench) | ${ms(one.bench)} | ${ms(split.bench)} | ${life('pgbench')} |`,
    `| all | ${ms(sum(one))} | ${ms(sum(split))} | ${lives.map((c) => ms(c.postgres + c.pgbench)).join(' / ')} |`,
  ];
}

/**
 * What half the ceiling leaves the service, in the one-process peak's own terms: the machine's CPU
 * time per payment at that rate, less what PostgreSQL, the simulator and the load generator took
 * per payment. First at 100% busy, which no run here reached, so that budget errs high; then at
 * the share of the CPUs pgbench itself kept busy, which the service's peak would have to match.
 */
function budgetText(r: CeilingResult): string {
  const half = r.livesPerS / 2;
  const c = r.service.cpuPerPayment;
  const others = c.postgres + c.simulator + c.bench;
  const perPayment = (r.cpus * 1000) / half;
  const busy = r.pgbench.reduce((sum, p) => sum + p.machine.busyPct, 0) / Math.max(1, r.pgbench.length) / 100;
  const noService = (r.cpus * 1000) / others;
  return (
    `At half the ceiling, ${fmt(half)} payments a second, ${r.cpus} CPUs give ${fmt(perPayment, 2)} ms of CPU per payment. PostgreSQL, the simulator and the load generator took ${fmt(others, 2)} of them ` +
    `in the one-process peak, which leaves the service ${fmt(perPayment - others, 2)} ms; it took ${fmt(c.service, 2)}. ` +
    `At the ${Math.round(busy * 100)}% of the CPUs pgbench itself kept busy, it would have ${fmt(perPayment * busy - others, 2)} ms. ` +
    `A service that took no CPU at all would reach at most about ${fmt(noService)} payments a second here, ${Math.round((noService / r.livesPerS) * 100)}% of the ceiling.`
  );
}

/** Rows written per table: the service's per payment against pgbench's per life (its first run). */
function writesTable(r: CeilingResult): string[] {
  const life = r.pgbench[0]?.perLife.tables ?? {};
  const names = [...new Set([...Object.keys(r.service.perPayment.tables), ...Object.keys(life)])].sort();
  const cell = (w: TableWrites | undefined) => (w ? `${fmt(w.inserted, 2)} / ${fmt(w.updated, 2)} / ${fmt(w.deleted, 2)}` : '-');
  return [
    '| table: rows inserted / updated / deleted | service, per payment | pgbench, per life |',
    '|---|---|---|',
    ...names.map((t) => `| ${t} | ${cell(r.service.perPayment.tables[t])} | ${cell(life[t])} |`),
  ];
}

/** What a life cost PostgreSQL: the buffers it touched and its CPU. */
const lifeCostText = (p: CeilingPgbench) =>
  `${fmt(p.perLife.blocks.hit + p.perLife.blocks.read, 0)} buffers (${fmt(p.perLife.blocks.read, 1)} from outside shared buffers) and ${fmt(p.cpuPerLife.postgres, 2)} ms of PostgreSQL's CPU`;

const pgbenchRow = (label: string, p: Observed<CeilingPgbench>) =>
  `| pgbench ${label} | ${fmt(p.livesPerS)} lives (${fmt(p.transactionsPerS)} transactions of ${p.transactionsPerLife} per life) | ${p.lives} lives, ${fmt(p.latencyMs)} ms a life; PostgreSQL counted ${fmt(p.perLife.transactions, 2)} transactions per life, ${lifeCostText(p)}; ${machineText(p.machine)} |`;

export function ceilingTable(r: CeilingResult): string {
  const [first, second] = r.pgbench;
  const p = first as Observed<CeilingPgbench>;
  return [
    `Database ceiling (${r.date}, ${r.cpus} CPUs, Node ${r.node}, ${r.postgres}); pgbench -c ${p.clients} -j ${p.threads} -T ${p.durationS} -M prepared:`,
    '',
    '| | per second | |',
    '|---|---|---|',
    ...(first ? [pgbenchRow('before the service', first)] : []),
    ...(second ? [pgbenchRow('after the service', second)] : []),
    `| ceiling: the runs' mean | ${fmt(r.livesPerS)} lives (${fmt(r.livesPerS * p.transactionsPerLife)} transactions) | |`,
    `| service, lifecycle peak, one process | ${r.service.peak} payments | ${r.service.payments} payments, after a warm-up burst of ${PEAK_WARMUP_PAYMENTS}; PostgreSQL counted ${fmt(r.service.transactionsPerPayment, 2)} transactions per payment; ${machineText(r.service.machine)} |`,
    `| share: one process / ceiling | ${Math.round(r.share * 100)}% | |`,
    `| service, lifecycle peak, ${SPLIT_LAYOUT_NAME} | ${r.split.peak} payments | ${r.split.payments} payments, after a warm-up burst of ${PEAK_WARMUP_PAYMENTS}; PostgreSQL counted ${fmt(r.split.transactionsPerPayment, 2)} transactions per payment; ${machineText(r.split.machine)} |`,
    `| share: ${SPLIT_LAYOUT_NAME} / ceiling | ${Math.round(r.splitShare * 100)}% | |`,
    '',
    `\`POST /payments\` against pgbench running its statements alone (${CREATE_LIFE.map((step) => step.file).join(', ')}: find the invoice, hold it, submit with its event), each in a database of its own:`,
    '',
    '| | per second | |',
    '|---|---|---|',
    ...r.create.map((c, i) => pgbenchRow(`create-only, ${i === 0 ? 'before' : 'after'} the service`, c)),
    `| create-only ceiling: the runs' mean | ${fmt(r.createLivesPerS)} lives | |`,
    `| service, the peak's \`POST /payments\` burst, one process | ${fmt(r.service.acceptedPerS)} payments accepted | ${r.service.payments} payments by ${PEAK_CONCURRENCY} payers, each paying again as soon as its payment is accepted |`,
    `| share: one process / create-only ceiling | ${Math.round(r.createShare * 100)}% | |`,
    `| service, the peak's \`POST /payments\` burst, ${SPLIT_LAYOUT_NAME} | ${fmt(r.split.acceptedPerS)} payments accepted | |`,
    `| share: ${SPLIT_LAYOUT_NAME} / create-only ceiling | ${Math.round(r.splitCreateShare * 100)}% | |`,
    '',
    '| transaction of the life | the service, per payment | the script (bench/ceiling/) |',
    '|---|---|---|',
    ...LIFE.map((s) => `| ${s.name} | ${s.service} | ${commandsIn(s.file)} statement, ${commandsIn(s.file)} round trip (${s.file}) |`),
    '',
    // Beyond the script's own: its clients' setup, the lives cut short when -T ran out, autovacuum.
    `Transactions per payment as PostgreSQL counted them: service ${fmt(r.service.perPayment.transactions, 2)} (background work included), pgbench ${fmt(p.perLife.transactions, 2)} (${p.transactionsPerLife} a life, plus each client's setup and the lives cut short at the end). Rows written:`,
    '',
    ...writesTable(r),
    '',
    'CPU time per payment, by process, from the first payment until every webhook was counted (idle polling included), against pgbench\'s per life:',
    '',
    ...cpuTable(r),
    '',
    budgetText(r),
  ].join('\n');
}

async function pgbenchRun(url: string, script: string, skip: number, label: string, steps: LifeStep[] = LIFE): Promise<Observed<CeilingPgbench>> {
  console.log(`ceiling: pgbench ${label}, -c ${CLIENTS} -j ${THREADS} -T ${DURATION_S} -M prepared...`);
  const { value, machine } = await observed(() => runPgbench(url, script, skip, steps));
  console.log(`ceiling: ${fmt(value.livesPerS)} lives/s (${fmt(value.transactionsPerS)} transactions/s); a life: ${lifeCostText(value)}`);
  return { ...value, machine };
}

/** A pgbench scratch database with its life's script, each removed by `drop`. */
async function scratch(pgUrl: string, kind: LifeKind): Promise<{ url: string; script: string; drop(): Promise<void> } | null> {
  const db = await freshDatabase(pgUrl, `bench_ceiling_${kind.name}`);
  if (!db) return null;
  try {
    const script = await prepareCeiling(db.url, kind);
    return { url: db.url, script, drop: async () => (rmSync(script, { force: true }), await db.drop()) };
  } catch (err) {
    await db.drop();
    throw err;
  }
}

interface Measured {
  pgbench: Observed<CeilingPgbench>[];
  create: Observed<CeilingPgbench>[];
  service: Observed<LifecyclePeak>;
  split: Observed<LifecyclePeak>;
}

/**
 * pgbench flat out on the whole life and on its create-only part (each in a database of its own),
 * the service's lifecycle peak, pgbench again: the machine is shared, and the runs around the
 * service's show how far its load moved meanwhile.
 */
async function measure(pgUrl: string): Promise<Measured | null> {
  const whole = await scratch(pgUrl, WHOLE);
  if (!whole) return null;
  const create = PGBENCH_ONLY ? null : await scratch(pgUrl, CREATE).catch(async (err: unknown) => (await whole.drop(), Promise.reject(err)));
  try {
    const first = await pgbenchRun(whole.url, whole.script, 0, 'before the service');
    if (!create) {
      await pgbenchRun(whole.url, whole.script, INVOICES_PER_RUN, 'again, with nothing between');
      return null;
    }
    const createFirst = await pgbenchRun(create.url, create.script, 0, 'create-only, before the service', CREATE_LIFE);
    console.log("ceiling: the service's lifecycle peak, one process...");
    const settings = { pgUrl, apiEntry: API_ENTRY, simulatorEntry: SIMULATOR_ENTRY, apiNodeFlags: START_PROD_NODE_FLAGS };
    const service = await observed(() => lifecyclePeak(settings));
    console.log(`ceiling: the service's lifecycle peak, ${SPLIT_LAYOUT_NAME}...`);
    const split = await observed(() => lifecyclePeak({ ...settings, layout: SPLIT_LAYOUT }));
    if (!service.value || !split.value) return null;
    const second = await pgbenchRun(whole.url, whole.script, INVOICES_PER_RUN, 'after the service');
    const createSecond = await pgbenchRun(create.url, create.script, INVOICES_PER_RUN, 'create-only, after the service', CREATE_LIFE);
    return {
      pgbench: [first, second],
      create: [createFirst, createSecond],
      service: { ...service.value, machine: service.machine },
      split: { ...split.value, machine: split.machine },
    };
  } finally {
    await whole.drop();
    await create?.drop();
  }
}

/** The server to measure on: the given one, or with `--server=own` a cluster of the bench's own on PostgreSQL's defaults. */
async function server(): Promise<{ url: string; cluster: PgCluster | null }> {
  if (!OWN_SERVER) return { url: GIVEN_PG_URL, cluster: null };
  if (!canRunOwnCluster()) throw new Error('--server=own needs the PostgreSQL server binaries under /usr/lib/postgresql and root, to run a cluster as the postgres user');
  const cluster = await createPgCluster(await freePort(), { durable: true });
  return { url: cluster.url('postgres'), cluster };
}

async function main(): Promise<number> {
  const { url, cluster } = await server();
  try {
    return await measureOn(url);
  } finally {
    await cluster?.destroy();
  }
}

async function measureOn(pgUrl: string): Promise<number> {
  const version = await withClient(pgUrl, (c) => c.query<{ v: string }>('SELECT version() AS v')).catch(() => null);
  if (!version) {
    console.log(`PostgreSQL unavailable at ${pgUrl}`);
    return 2;
  }
  const measured = await measure(pgUrl);
  if (!measured) return PGBENCH_ONLY ? 0 : 2;
  const mean = (runs: CeilingPgbench[]) => runs.reduce((n, r) => n + r.livesPerS, 0) / runs.length;
  const livesPerS = mean(measured.pgbench);
  const createLivesPerS = mean(measured.create);
  const result: CeilingResult = {
    date: new Date().toISOString(),
    cpus: cpus().length,
    node: process.version,
    postgres: (version.rows[0]?.v ?? '').split(' on ')[0] ?? '',
    pgbench: measured.pgbench,
    livesPerS,
    service: measured.service,
    share: measured.service.peak / livesPerS,
    split: measured.split,
    splitShare: measured.split.peak / livesPerS,
    create: measured.create,
    createLivesPerS,
    createShare: measured.service.acceptedPerS / createLivesPerS,
    splitCreateShare: measured.split.acceptedPerS / createLivesPerS,
  };
  const md = ceilingTable(result);
  console.log(`\n${md}`);
  writeFileSync('bench/results/ceiling.md', `${md}\n`);
  writeFileSync('bench/results/ceiling.json', `${JSON.stringify(result, null, 2)}\n`);
  return 0;
}

process.exitCode = await main();
