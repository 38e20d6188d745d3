import { execFileSync } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import autocannon, { type Request as AcRequest } from 'autocannon';
import { UNLIMITED_RATES, apiEnv, cpuMsOf, createPartner, freePort, freshDatabase, startProcess, type Proc, START_PROD_NODE_FLAGS } from './bench-processes.js';
import { pacedLoad, type PacedResult } from './paced-load.js';
import { lifecycleBench, lifecycleTable, splitLifecycleTable, type LifecycleLayout, type LifecycleResult } from './lifecycle.bench.js';
import { rolesBench, rolesTable } from './roles.bench.js';
import { testSuiteRun, testSuiteTable } from './test-suite.bench.js';

/**
 * `npm run bench`: the service on PostgreSQL and on PGlite against a bare Fastify baseline, in
 * one run on one machine. Each endpoint is driven to its peak, then at 50% of that peak for
 * latency. Results go to bench/results/latest.{md,json}.
 */
const flag = (name: string) => process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
const DURATION_S = Number(flag('duration') ?? 6);
const CONNECTIONS = 32;
const WARMUP_S = 2;
const SETTLE_MS = 1000;
const MINISTRY_TIMEOUT_MS = 1000;
const FANOUT_DELAY_MS = 600;
const PARTNERS = 8;
const REGISTERS_PER_PARTNER = 2;
const INVOICES_PER_REGISTER = 1500;
const PG_URL = flag('pg') ?? 'postgres://postgres@127.0.0.1:5432/test';
/** `--stores=postgres` and `--endpoints=read,pay` narrow a run while working on one path. */
const STORES = (flag('stores') ?? 'postgres,pglite').split(',');
const ENDPOINTS = (flag('endpoints') ?? 'suite,read,search,pay,status,qrflood,lifecycle,roles,ceiling').split(',');
/**
 * `suite`, `lifecycle`, `roles` and `ceiling` are not one endpoint of one store: the test suite
 * runs before them (bench/test-suite.bench.ts), the others after them (bench/lifecycle.bench.ts,
 * bench/roles.bench.ts, and `npm run bench:ceiling`, whose table the results take in).
 */
const WHOLE_PHASES = ['suite', 'lifecycle', 'roles', 'ceiling'];
const STORE_ENDPOINTS = ENDPOINTS.filter((name) => !WHOLE_PHASES.includes(name));
/** `qrflood`: connections flooding one payment's QR landing page, and the partner API's pace meanwhile. */
const QR_FLOOD_CONNECTIONS = 50;
const QR_FLOOD_PARTNER_RATE = 20;
/** `--qr-limit=N` sets SHORT_LINK_RATE_LIMIT_PER_MINUTE (the service's default otherwise), e.g. to see the flood unlimited. */
const QR_LIMIT = flag('qr-limit');
/** `--cpu-prof`: the API (per store) and the simulator write V8 CPU profiles to bench/results/profiles/. */
const CPU_PROF = process.argv.includes('--cpu-prof');
/**
 * The service and simulator run from the production build (`npm run build`, made at the start of
 * the run) on plain Node, as `npm run start:prod` runs them; `--source` runs the TypeScript through
 * tsx instead, whose loader thread adds its own heap to the RSS.
 */
const FROM_SOURCE = process.argv.includes('--source');
const API_ENTRY = FROM_SOURCE ? 'src/bin/api.ts' : 'dist/src/bin/api.js';
/** The Node flags `npm run start:prod` gives the service (its heap budget), so the bench measures that process. */
const SIMULATOR_ENTRY = FROM_SOURCE ? 'simulator/bin/simulator.ts' : 'dist/simulator/bin/simulator.js';
/** `--memory`: after each endpoint, the API's heap, external memory and RSS from its /metrics. */
const MEMORY = process.argv.includes('--memory');
/** `--stalls`: where in the 50% phase the answers slower than p99 were sent (one stall or spread out). */
const STALLS = process.argv.includes('--stalls');
/** `--trace-gc`: the API prints V8's GC trace (to find pauses behind a latency tail). */
const TRACE_GC = process.argv.includes('--trace-gc');
/**
 * `--tracing=0.1,1` (the default; `--tracing=` for none): after the untraced store runs, GET
 * /invoices/{id} and POST /payments again with span export on at each sampling ratio, to a local
 * collector stub, on the first store measured, so the rows sit beside the untraced ones.
 */
const TRACING_RATIOS = (flag('tracing') ?? '0.1,1').split(',').filter(Boolean).map(Number);
const TRACED_ENDPOINTS = ['read', 'pay'];
const ADMIN_TOKEN = 'bench-admin-token';
/**
 * The baseline server and the simulator stand in for other hosts and go idle while the service is
 * measured. V8's memory reducer then runs up to three major GCs, 8 s after a process's last work
 * and about half a second apart, on four threads: the simulator's took both cores for 20-50 ms at
 * a time in the service's 50% phase (`perf sched`). The simulator also gets one GC thread.
 */
const IDLE_HELPER_FLAGS = ['--no-memory-reducer'];
const SIMULATOR_NODE_FLAGS = [...IDLE_HELPER_FLAGS, '--v8-pool-size=1'];

/** The partner API's latency alone and under a flood of `/q/{id}` from one client address. */
interface QrFlood {
  store: string;
  limitPerMinute: string;
  floodRps: number;
  flood2xx: number;
  flood429: number;
  quiet: { p50: number; p99: number };
  flooded: { p50: number; p99: number };
  partnerNon2xx: number;
}

interface Row {
  store: string;
  endpoint: string;
  peakRps: number;
  /** The bare baseline's peak, measured just before this endpoint. */
  baselineRps: number;
  ratio: number;
  p50: number;
  p99: number;
  rateAtHalf: number;
  errors: number;
  /** CPU time the hypervisor took from the VM during the 50% phase (ms, both vCPUs); null off Linux. */
  stealMs: number | null;
  /** The service's own CPU time per answered request in the 50% phase (µs, its process's user + system); null off Linux. */
  cpuUsPerRequest: number | null;
}

/**
 * CPU µs per request of process `pid` over `run`, from /proc: a steady phase's cost per request,
 * which the machine's swings in speed move far less than a peak. Null off Linux.
 */
async function cpuPerRequest<T extends { sent: number }>(pid: number | undefined, run: () => Promise<T>): Promise<{ result: T; cpuUs: number | null }> {
  const before = pid === undefined ? 0 : cpuMsOf([pid]);
  const result = await run();
  const spent = pid === undefined ? 0 : cpuMsOf([pid]) - before;
  return { result, cpuUs: pid === undefined || before === 0 || result.sent === 0 ? null : Math.round((spent * 1000) / result.sent) };
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
  method: 'GET' | 'POST';
  next: () => { path: string; key: string; body?: string };
}

async function measure(
  baseUrl: string,
  target: Target,
  pid?: number,
): Promise<{ peak: number; rate: number; errors: number; cpuUs: number | null } & Pick<PacedResult, 'p50' | 'p99' | 'sendLagP99' | 'startedAtMs' | 'slowWindows' | 'clientPause' | 'steal'>> {
  const setupRequest = (req: AcRequest) => {
    const n = target.next();
    return { ...req, method: target.method, path: n.path, headers: { 'x-api-key': n.key, 'content-type': 'application/json' }, body: n.body };
  };
  // A short warm-up first, so the JIT has compiled the path before the measured run.
  await run({ url: baseUrl, connections: CONNECTIONS, duration: WARMUP_S, requests: [{ setupRequest }] });
  const peak = await run({ url: baseUrl, connections: CONNECTIONS, duration: DURATION_S, requests: [{ setupRequest }] });
  const rate = Math.max(1, Math.floor(peak.requests.average * 0.5));
  // The latency phase measures a steady 50% load, not the way out of the overload before it: the
  // peak run's last answers, its 32 sockets closing and a GC of its garbage land here otherwise.
  await sleep(SETTLE_MS);
  const { result: half, cpuUs } = await cpuPerRequest(pid, () =>
    pacedLoad(new URL(baseUrl).origin, rate, DURATION_S, () => {
      const n = target.next();
      return { method: target.method, path: n.path, headers: { 'x-api-key': n.key, 'content-type': 'application/json' }, body: n.body };
    }),
  );
  return {
    cpuUs,
    peak: Math.round(peak.requests.average),
    p50: half.p50,
    p99: half.p99,
    sendLagP99: half.sendLagP99,
    rate,
    errors: peak.non2xx + peak.errors + half.non2xx + half.errors,
    startedAtMs: half.startedAtMs,
    slowWindows: half.slowWindows,
    clientPause: half.clientPause,
    steal: half.steal,
  };
}

/** `--stalls`: the phase's wall-clock start (to find it in PostgreSQL's or perf's logs) and its slowest windows. */
function stallsLine(r: Pick<PacedResult, 'startedAtMs' | 'slowWindows' | 'steal'>): string {
  const windows = r.slowWindows.map((w) => `${w.overP99} at ${w.atMs} ms (max ${w.maxMs} ms)`).join(', ');
  const steal = r.steal.totalMs === null ? 'not readable' : `${r.steal.totalMs} ms${r.steal.windows.map((w) => `, ${w.ms} at ${w.atMs} ms`).join('')}`;
  return `          phase from ${new Date(r.startedAtMs).toISOString()}; answers over p99 by send time: ${windows}\n          CPU steal (hypervisor) in the phase: ${steal}`;
}

async function json(url: string, init: RequestInit = {}) {
  const res = await fetch(url, init);
  return (await res.json()) as Record<string, unknown>;
}

async function memoryLine(adminUrl: string): Promise<string> {
  const text = await (await fetch(`${adminUrl}/metrics`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).text();
  const mb = (name: string) => Math.round(Number(new RegExp(`^${name} (\\S+)`, 'm').exec(text)?.[1] ?? 0) / 2 ** 20);
  return `          memory: heap used ${mb('nodejs_heap_size_used_bytes')} MB of ${mb('nodejs_heap_size_total_bytes')} MB, external ${mb('nodejs_external_memory_bytes')} MB, RSS ${mb('process_resident_memory_bytes')} MB`;
}

interface FanOut {
  case: string;
  ms: number;
  sumMs: number;
}

/**
 * The search asks the three ministry systems at once: with every source slowed the answer takes
 * about one delay, not three, and a source that never answers costs the timeout once.
 */
async function fanOutCheck(api: string, simUrl: string, key: string): Promise<FanOut[]> {
  const fault = (source: string, mode: string, delayMs?: number) =>
    fetch(`${simUrl}/__control/faults`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ source, mode, delayMs }) });
  const timeSearch = async () => {
    const t0 = performance.now();
    await json(`${api}/invoices?ttd=SMALL1`, { headers: { 'x-api-key': key } });
    return Math.round(performance.now() - t0);
  };
  const sources = ['mof', 'etax', 'police'];
  const out: FanOut[] = [];
  try {
    for (const s of sources) await fault(s, 'slow', FANOUT_DELAY_MS);
    out.push({ case: `all three sources ${FANOUT_DELAY_MS} ms slow`, ms: await timeSearch(), sumMs: 3 * FANOUT_DELAY_MS });
    await fault('police', 'timeout');
    out.push({
      case: `two ${FANOUT_DELAY_MS} ms slow, one never answers (timeout ${MINISTRY_TIMEOUT_MS} ms)`,
      ms: await timeSearch(),
      sumMs: 2 * FANOUT_DELAY_MS + MINISTRY_TIMEOUT_MS,
    });
  } finally {
    for (const s of sources) await fault(s, 'none');
  }
  for (const f of out) console.log(`fan-out   ${f.case}: search took ${f.ms} ms (the sum would be ${f.sumMs} ms)`);
  return out;
}

async function createPartners(adminUrl: string): Promise<string[]> {
  const keys: string[] = [];
  for (let p = 0; p < PARTNERS; p++) keys.push((await createPartner(adminUrl, ADMIN_TOKEN, `Bench ${p}`)).apiKey);
  return keys;
}

/** Each partner looks up its own registers: this stores the invoices and grants the partner access. */
async function lookUpAll(api: string, keys: string[]): Promise<{ key: string; id: string }[][]> {
  const owned: { key: string; id: string }[][] = [];
  for (const [p, key] of keys.entries()) {
    const mine: { key: string; id: string }[] = [];
    for (let r = 0; r < REGISTERS_PER_PARTNER; r++) {
      const found = await json(`${api}/invoices?ttd=BR${p * REGISTERS_PER_PARTNER + r}`, { headers: { 'x-api-key': key } });
      for (const inv of found.invoices as { id: string }[]) mine.push({ key, id: inv.id });
    }
    await json(`${api}/invoices?ttd=SMALL1`, { headers: { 'x-api-key': key } });
    owned.push(mine);
  }
  return owned;
}

/**
 * GET /reports/summary paced at QR_FLOOD_PARTNER_RATE/s, once alone and once while autocannon
 * holds QR_FLOOD_CONNECTIONS connections on one payment's `/q/{id}` (no key, one client address).
 */
async function qrFlood(store: string, api: string, key: string, paymentId: string): Promise<QrFlood> {
  const origin = new URL(api).origin;
  const summary = () => ({ method: 'GET' as const, path: '/api/v1/reports/summary', headers: { 'x-api-key': key } });
  const quiet = await pacedLoad(origin, QR_FLOOD_PARTNER_RATE, DURATION_S, summary, 8);
  const flooding = run({ url: `${origin}/q/${paymentId}`, connections: QR_FLOOD_CONNECTIONS, duration: DURATION_S + 2 });
  await sleep(SETTLE_MS);
  const flooded = await pacedLoad(origin, QR_FLOOD_PARTNER_RATE, DURATION_S, summary, 8);
  const flood = await flooding;
  const count = (code: string) => (flood.statusCodeStats as Record<string, { count: number } | undefined>)[code]?.count ?? 0;
  const result: QrFlood = {
    store,
    limitPerMinute: QR_LIMIT ?? 'default',
    floodRps: Math.round(flood.requests.average),
    flood2xx: count('200'),
    flood429: count('429'),
    quiet: { p50: quiet.p50, p99: quiet.p99 },
    flooded: { p50: flooded.p50, p99: flooded.p99 },
    partnerNon2xx: quiet.non2xx + quiet.errors + flooded.non2xx + flooded.errors,
  };
  console.log(
    `${store.padEnd(9)} /q flood ${QR_FLOOD_CONNECTIONS} conn: ${result.floodRps}/s (${result.flood2xx} x 200, ${result.flood429} x 429); ` +
      `GET /reports/summary @ ${QR_FLOOD_PARTNER_RATE}/s p50/p99 alone ${quiet.p50}/${quiet.p99} ms, during the flood ${flooded.p50}/${flooded.p99} ms`,
  );
  return result;
}

/** A run of a store with span export on: its label's suffix, the settings it adds, the endpoints it measures. */
interface StoreVariant {
  suffix: string;
  env: Record<string, string>;
  endpoints: string[];
}

/** An OTLP/HTTP receiver that takes every batch and keeps nothing: the export's cost without a real collector's. */
async function startCollectorStub(): Promise<{ url: string; close(): Promise<void> }> {
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end('{}'));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

function tracedVariant(ratio: number, collectorUrl: string): StoreVariant {
  return {
    suffix: ` +otel ${ratio}`,
    env: { OTEL_EXPORTER_OTLP_ENDPOINT: collectorUrl, OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: String(ratio), OTEL_BSP_SCHEDULE_DELAY: '1000' },
    endpoints: TRACED_ENDPOINTS,
  };
}

async function benchStore(
  store: string,
  simUrl: string,
  measureBaseline: () => Promise<number>,
  databaseUrl: string | null,
  variant?: StoreVariant,
): Promise<{ rows: Row[]; rssMb: number; fanOut: FanOut[]; floods: QrFlood[] }> {
  const [port, adminPort] = [await freePort(), await freePort()];
  const label = `${store}${variant?.suffix ?? ''}`;
  const env = apiEnv({
    port,
    adminPort,
    adminToken: ADMIN_TOKEN,
    simulatorUrl: simUrl,
    databaseUrl,
    extra: {
      ...UNLIMITED_RATES,
      CONFIRM_POLL_MS: '60000',
      MINISTRY_TIMEOUT_MS: String(MINISTRY_TIMEOUT_MS),
      // The read phase measures cache hits: the lookups that fill the cache and the reads after them
      // take longer than the default 30 s TTL on PGlite, and a miss is a database read (measured
      // separately: the same endpoint before the cache existed).
      INVOICE_CACHE_TTL_MS: '120000',
      ...(QR_LIMIT ? { SHORT_LINK_RATE_LIMIT_PER_MINUTE: QR_LIMIT } : {}),
      ...variant?.env,
    },
  });
  const api = `http://127.0.0.1:${port}/api/v1`;
  const profileDir = 'bench/results/profiles';
  if (CPU_PROF) mkdirSync(profileDir, { recursive: true });
  const nodeArgs = [...START_PROD_NODE_FLAGS, ...(CPU_PROF ? [`--cpu-prof`, `--cpu-prof-dir=${profileDir}/${store}`] : []), ...(TRACE_GC ? ['--trace-gc'] : [])];
  const proc = await startProcess([API_ENTRY], env, `${api}/health/ready`, nodeArgs, TRACE_GC ? 'inherit' : 'ignore');
  try {
    const keys = await createPartners(`http://127.0.0.1:${adminPort}`);
    const owned = await lookUpAll(api, keys);
    const all = owned.flat();
    let i = 0;
    let payCursor = 0;
    const rows: Row[] = [];
    const pick = <T>(list: T[]) => list[i++ % list.length] as T;
    const nextInvoiceToPay = () => all[payCursor++ % all.length] as { key: string; id: string };
    const targets: Record<string, Target & { label: string; before?: () => Promise<void> }> = {
      read: {
        label: 'GET /invoices/{id}',
        method: 'GET',
        // Reads follow a fresh lookup, as a partner's do: the cache then holds what it just stored.
        before: async () => void (await lookUpAll(api, keys)),
        next: () => { const o = pick(all); return { path: `/api/v1/invoices/${o.id}`, key: o.key }; } },
      search: { label: 'GET /invoices?ttd=', method: 'GET', next: () => ({ path: '/api/v1/invoices?ttd=SMALL1', key: pick(all).key }) },
      pay: {
        label: 'POST /payments',
        method: 'POST',
        next: () => { const o = nextInvoiceToPay(); return { path: '/api/v1/payments', key: o.key, body: JSON.stringify({ invoiceId: o.id }) }; },
      },
      status: { label: 'GET /payments/{id}', method: 'GET', next: () => { const p = pick(payments); return { path: `/api/v1/payments/${p.id}`, key: p.key }; } },
    };
    let payments: { key: string; id: string }[] = [];
    const floods: QrFlood[] = [];
    for (const name of STORE_ENDPOINTS.filter((e) => !variant || variant.endpoints.includes(e))) {
      if (name === 'qrflood') {
        if (payments.length === 0) payments = await collectPayments(api, keys, nextInvoiceToPay);
        const target = payments[0] as { key: string; id: string };
        floods.push(await qrFlood(store, api, target.key, target.id));
        continue;
      }
      const target = targets[name];
      if (!target) throw new Error(`unknown endpoint ${name}; known: ${Object.keys(targets).join(', ')}`);
      if (name === 'status') payments = await collectPayments(api, keys, nextInvoiceToPay);
      // The baseline is measured again right before each endpoint: the shared machine's speed drifts
      // by tens of percent between minutes, and a ratio is only fair between neighbouring runs.
      const baselinePeak = await measureBaseline();
      await target.before?.();
      const m = await measure(api, target, proc.child.pid);
      rows.push({ store: label, endpoint: target.label, peakRps: m.peak, baselineRps: baselinePeak, ratio: m.peak / baselinePeak, p50: m.p50, p99: m.p99, rateAtHalf: m.rate, errors: m.errors, stealMs: m.steal.totalMs, cpuUsPerRequest: m.cpuUs });
      if (MEMORY) console.log(await memoryLine(`http://127.0.0.1:${adminPort}`));
      if (STALLS) {
        console.log(stallsLine(m));
        const pause = m.clientPause;
        console.log(`          client: max GC ${pause.maxGcMs} ms, max loop delay ${pause.maxLoopDelayMs} ms; GC over 10 ms: ${pause.gcOver10Ms.map((g) => `${g.ms} ms at ${g.atMs} ms`).join(', ') || 'none'}`);
      }
      console.log(`${label.padEnd(9)} ${target.label.padEnd(24)} peak ${m.peak}/s (${((m.peak / baselinePeak) * 100).toFixed(1)}% of ${baselinePeak}/s)  p50 ${m.p50} ms  p99 ${m.p99} ms @ ${m.rate}/s (client send lag p99 ${m.sendLagP99} ms)  non-2xx ${m.errors}  CPU steal ${m.steal.totalMs ?? '?'} ms  service CPU ${m.cpuUs ?? '?'} us a request @50%`);
    }
    const rssMb = proc.peakRssMb();
    // Last: its timeouts count as failures towards the circuit breaker.
    const fanOut = variant ? [] : await fanOutCheck(api, simUrl, keys[0] as string);
    return { rows, rssMb, fanOut, floods };
  } finally {
    await proc.stop();
  }
}

/** Each partner's latest payments; when a run skipped POST /payments, a few are made first. */
async function collectPayments(api: string, keys: string[], nextInvoice: () => { key: string; id: string }): Promise<{ key: string; id: string }[]> {
  const out: { key: string; id: string }[] = [];
  for (const key of keys) {
    const seen = await json(`${api}/reports/payments?limit=1`, { headers: { 'x-api-key': key } });
    if ((seen.items as unknown[]).length > 0) continue;
    for (let n = 0; n < 50; n++) {
      const o = nextInvoice();
      await json(`${api}/payments`, { method: 'POST', headers: { 'x-api-key': o.key, 'content-type': 'application/json' }, body: JSON.stringify({ invoiceId: o.id }) });
    }
  }
  // The row measures reads of settled payments: a read of a submitted one asks its ministry at most
  // once a second within the system's limit, so it would measure the confirmations instead.
  const settleBy = Date.now() + 60_000;
  for (const key of keys) {
    for (;;) {
      const list = await json(`${api}/reports/payments?limit=100`, { headers: { 'x-api-key': key } });
      const items = list.items as { id: string; status: string }[];
      if (items.every((item) => item.status === 'confirmed') || Date.now() > settleBy) {
        for (const item of items) out.push({ key, id: item.id });
        break;
      }
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  }
  return out;
}

async function withSimulator<T>(fixtures: string, fn: (url: string) => Promise<T>): Promise<T> {
  const port = await freePort();
  // The ministry confirms each payment 1 ms after it is submitted (0 would mean never), so the
  // first status read confirms it live and later reads answer from the database.
  const simArgs = [...SIMULATOR_NODE_FLAGS, ...(CPU_PROF ? ['--cpu-prof', '--cpu-prof-dir=bench/results/profiles/simulator'] : [])];
  const sim: Proc = await startProcess([SIMULATOR_ENTRY], { SIMULATOR_PORT: String(port), SIMULATOR_FIXTURES: fixtures, SIMULATOR_AUTO_APPROVE_MS: '1', LOG_LEVEL: 'warn' }, `http://127.0.0.1:${port}/mof/api/invoices/NOPE`, simArgs);
  try {
    return await fn(`http://127.0.0.1:${port}`);
  } finally {
    await sim.stop();
  }
}

interface BaselineHalf {
  rate: number;
  p50: number;
  p99: number;
  stealMs: number | null;
  cpuUsPerRequest: number | null;
}

/**
 * The same open-loop client against the bare server at 50% of its own peak: the tail that this
 * machine, its kernel and the client give a server that does nothing, for reading the endpoints'.
 */
async function measureBaselineAtHalf(origin: string, peak: number, pid: number | undefined): Promise<BaselineHalf | null> {
  if (peak === 0) return null;
  const rate = Math.floor(peak * 0.5);
  const { result: half, cpuUs } = await cpuPerRequest(pid, () => pacedLoad(origin, rate, DURATION_S, () => ({ method: 'GET', path: '/hello', headers: {} })));
  if (STALLS) console.log(stallsLine(half));
  console.log(`baseline  bare Fastify hello JSON  p50 ${half.p50} ms  p99 ${half.p99} ms @ ${rate}/s (client send lag p99 ${half.sendLagP99} ms)  CPU ${cpuUs ?? '?'} us a request`);
  return { rate, p50: half.p50, p99: half.p99, stealMs: half.steal.totalMs, cpuUsPerRequest: cpuUs };
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? 0;
}

function floodTable(floods: QrFlood[]): string[] {
  if (floods.length === 0) return [];
  return [
    '',
    `| store | SHORT_LINK_RATE_LIMIT_PER_MINUTE | /q/{id} flood, ${QR_FLOOD_CONNECTIONS} conn: req/s | 200s | 429s | GET /reports/summary @ ${QR_FLOOD_PARTNER_RATE}/s alone p50/p99 ms | during the flood p50/p99 ms | partner non-2xx |`,
    '|---|---|---|---|---|---|---|---|',
    ...floods.map((f) => `| ${f.store} | ${f.limitPerMinute} | ${f.floodRps} | ${f.flood2xx} | ${f.flood429} | ${f.quiet.p50} / ${f.quiet.p99} | ${f.flooded.p50} / ${f.flooded.p99} | ${f.partnerNon2xx} |`),
  ];
}

function table(baselines: number[], baselineHalf: BaselineHalf | null, rows: Row[], rss: Record<string, number>, fanOut: FanOut[], floods: QrFlood[]): string {
  const lines = [
    `| store | endpoint | peak req/s | baseline req/s (just before) | vs baseline | p50 ms @50% | p99 ms @50% | non-2xx | CPU steal ms @50% | the server's CPU µs a request @50% |`,
    `|---|---|---|---|---|---|---|---|---|---|`,
    `| - | bare Fastify hello JSON (median of ${baselines.length}; ${Math.min(...baselines)} to ${Math.max(...baselines)}) | ${median(baselines)} | | 100% | ${baselineHalf?.p50 ?? ''} | ${baselineHalf?.p99 ?? ''} | | ${baselineHalf?.stealMs ?? ''} | ${baselineHalf?.cpuUsPerRequest ?? ''} |`,
    ...rows.map((r) => `| ${r.store} | ${r.endpoint} | ${r.peakRps} | ${r.baselineRps} | ${(r.ratio * 100).toFixed(1)}% | ${r.p50} | ${r.p99} | ${r.errors} | ${r.stealMs ?? ''} | ${r.cpuUsPerRequest ?? ''} |`),
    '',
    ...Object.entries(rss).map(([store, mb]) => `Peak RSS of the API on ${store}: ${mb} MB`),
    '',
    ...fanOut.map((f) => `Search fan-out, ${f.case}: ${f.ms} ms (one after another would take ${f.sumMs} ms)`),
    ...floodTable(floods),
  ];
  return lines.join('\n');
}

/**
 * `npm run bench:ceiling` on the same PostgreSQL, last: pgbench runs the service's SQL for one
 * payment's life flat out, and the service's lifecycle peak is taken as a share of it. Null when
 * it cannot run here (no PostgreSQL or no pgbench: it says why).
 */
function runCeiling(): { md: string; json: unknown } | null {
  try {
    execFileSync(process.execPath, ['--import', 'tsx', 'bench/ceiling.bench.ts', `--pg=${PG_URL}`], { stdio: 'inherit' });
  } catch {
    return null;
  }
  return { md: readFileSync('bench/results/ceiling.md', 'utf8'), json: JSON.parse(readFileSync('bench/results/ceiling.json', 'utf8')) as unknown };
}

/**
 * The steady phases run at half the lifecycle peak the bench measures first (the issue's "50%
 * load"), or at `--lifecycle-rate` payments per second.
 */
function runLifecycle(layout?: LifecycleLayout, atRate?: number): Promise<LifecycleResult | null> {
  const rate = atRate ?? (flag('lifecycle-rate') ? Number(flag('lifecycle-rate')) : null);
  const apiNodeFlags = [...START_PROD_NODE_FLAGS, ...(CPU_PROF ? ['--cpu-prof', '--cpu-prof-dir=bench/results/profiles/lifecycle'] : [])];
  return lifecycleBench({ pgUrl: PG_URL, layout, rate, durationS: Number(flag('lifecycle-duration') ?? 20), apiEntry: API_ENTRY, simulatorEntry: SIMULATOR_ENTRY, apiNodeFlags });
}

/** GET /invoices/{id} and POST /payments with span export on, at each of TRACING_RATIOS, each on a fresh database. */
async function tracedRows(fixtures: string, measureBaseline: () => Promise<number>): Promise<Row[]> {
  const store = STORES.includes('postgres') ? 'postgres' : 'pglite';
  if (TRACING_RATIOS.length === 0 || !TRACED_ENDPOINTS.some((e) => STORE_ENDPOINTS.includes(e))) return [];
  const collector = await startCollectorStub();
  const rows: Row[] = [];
  try {
    for (const ratio of TRACING_RATIOS) {
      const db = store === 'postgres' ? await freshDatabase(PG_URL, 'bench') : null;
      try {
        const res = await withSimulator(fixtures, (sim) => benchStore(store, sim, measureBaseline, db?.url ?? null, tracedVariant(ratio, collector.url)));
        rows.push(...res.rows);
      } finally {
        await db?.drop();
      }
    }
  } finally {
    await collector.close();
  }
  return rows;
}

async function main(): Promise<void> {
  const started = Date.now();
  if (!FROM_SOURCE) execFileSync('npm', ['run', '--silent', 'build'], { stdio: 'inherit' });
  const suite = ENDPOINTS.includes('suite') ? await testSuiteRun() : null;
  const basePort = await freePort();
  const baseline = await startProcess(['bench/baseline-server.ts', String(basePort)], {}, `http://127.0.0.1:${basePort}/hello`, IDLE_HELPER_FLAGS);
  const baselines: number[] = [];
  const measureBaseline = async () => {
    const url = `http://127.0.0.1:${basePort}/hello`;
    if (baselines.length === 0) await run({ url, connections: CONNECTIONS, duration: WARMUP_S });
    const r = await run({ url, connections: CONNECTIONS, duration: DURATION_S });
    baselines.push(Math.round(r.requests.average));
    return Math.round(r.requests.average);
  };
  const fixtures = writeFixtures();
  const rows: Row[] = [];
  const rss: Record<string, number> = {};
  let fanOut: FanOut[] = [];
  const floods: QrFlood[] = [];
  let baselineHalf: BaselineHalf | null = null;
  try {
    const pgDb = STORES.includes('postgres') && STORE_ENDPOINTS.length > 0 ? await freshDatabase(PG_URL, 'bench') : null;
    if (pgDb) {
      try {
        const res = await withSimulator(fixtures, (sim) => benchStore('postgres', sim, measureBaseline, pgDb.url));
        rows.push(...res.rows);
        rss.postgres = res.rssMb;
        fanOut = res.fanOut;
        floods.push(...res.floods);
      } finally {
        await pgDb.drop();
      }
    }
    if (STORES.includes('pglite') && STORE_ENDPOINTS.length > 0) {
      const lite = await withSimulator(fixtures, (sim) => benchStore('pglite', sim, measureBaseline, null));
      rows.push(...lite.rows);
      rss.pglite = lite.rssMb;
      floods.push(...lite.floods);
      if (fanOut.length === 0) fanOut = lite.fanOut;
    }
    rows.push(...(await tracedRows(fixtures, measureBaseline)));
    baselineHalf = await measureBaselineAtHalf(`http://127.0.0.1:${basePort}`, median(baselines), baseline.child.pid);
  } finally {
    await baseline.stop();
  }
  const lifecycle = ENDPOINTS.includes('lifecycle') ? await runLifecycle() : null;
  // The same steady rate through 2 api processes and 1 worker.
  const split = lifecycle && ENDPOINTS.includes('roles') ? await runLifecycle({ apis: 2, worker: true }, lifecycle.rate) : null;
  // `--roles-backlog=N` payments await their checks while POST /payments is measured (5,000 by default).
  const roles = ENDPOINTS.includes('roles')
    ? await rolesBench({ pgUrl: PG_URL, apiEntry: API_ENTRY, simulatorEntry: SIMULATOR_ENTRY, apiNodeFlags: START_PROD_NODE_FLAGS, durationS: DURATION_S, backlog: Number(flag('roles-backlog') ?? 5000) })
    : null;

  const ceiling = ENDPOINTS.includes('ceiling') ? runCeiling() : null;

  const payPeak = rows.find((r) => r.store === 'postgres' && r.endpoint === 'POST /payments')?.peakRps ?? null;
  const storeTable = rows.length > 0 ? table(baselines, baselineHalf, rows, rss, fanOut, floods) : floodTable(floods).join('\n').trim();
  const md = [...(suite ? [testSuiteTable(suite), ''] : []), ...(storeTable ? [storeTable, ''] : []), ...(lifecycle ? [lifecycleTable(lifecycle, payPeak), ''] : []), ...(split ? [splitLifecycleTable(split), ''] : []), ...(roles ? [rolesTable(roles)] : []), ...(ceiling ? ['', ceiling.md.trim()] : [])].join('\n');
  mkdirSync('bench/results', { recursive: true });
  // Only a full run replaces the recorded results; narrowed or shortened runs land beside them.
  const full = !flag('stores') && !flag('endpoints') && !flag('duration') && flag('tracing') === undefined && !flag('roles-backlog') && !QR_LIMIT && !CPU_PROF && !TRACE_GC && !MEMORY && !STALLS && !FROM_SOURCE;
  const out = full ? 'bench/results/latest' : 'bench/results/partial';
  writeFileSync(`${out}.md`, `${md}\n`);
  writeFileSync(`${out}.json`, JSON.stringify({ date: new Date().toISOString(), node: process.version, durationS: DURATION_S, connections: CONNECTIONS, warmupS: WARMUP_S, baselines, baselineHalf, rows, rssMb: rss, fanOut, qrFlood: floods, lifecycle, lifecycleSplit: split, roles, ceiling: ceiling?.json ?? null, testSuite: suite }, null, 2));
  console.log(`\n${md}\n\nbench took ${Math.round((Date.now() - started) / 1000)} s`);
}

await main();
