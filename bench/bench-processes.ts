import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { loadavg, setPriority, tmpdir } from 'node:os';
import { createServer } from 'node:net';
import { createServer as createHttpServer, type Server } from 'node:http';
import pg from 'pg';

/** A `--name=value` argument of the bench's command line. */
export function benchFlag(name: string): string | undefined {
  return process.argv.find((a) => a.startsWith(`--${name}=`))?.split('=').slice(1).join('=');
}

/** The Node flags `npm run start:prod` gives the service (its heap budget), for a bench that runs it from source. */
export const START_PROD_NODE_FLAGS: string[] =
  (JSON.parse(readFileSync('package.json', 'utf8')) as { scripts: Record<string, string> }).scripts['start:prod']?.split(' ').filter((word) => word.startsWith('--')) ?? [];

/** A JSON POST, with the partner's key when given. */
export function jsonPost(body: unknown, key?: string): RequestInit {
  return { method: 'POST', headers: { 'content-type': 'application/json', ...(key ? { 'x-api-key': key } : {}) }, body: JSON.stringify(body) };
}

export function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const srv = createServer();
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

export interface Proc {
  child: ChildProcess;
  stop(): Promise<void>;
  /** Peak resident set size in MB (VmHWM), read from /proc. */
  peakRssMb(): number;
}

export async function startProcess(args: string[], env: Record<string, string>, readyUrl: string, nodeArgs: string[] = [], stdout: 'ignore' | 'inherit' = 'ignore'): Promise<Proc> {
  // TypeScript runs through tsx; the compiled build (dist/*.js) runs on plain Node, as in production.
  const loader = args[0]?.endsWith('.ts') ? ['--import', 'tsx'] : [];
  const child = spawn(process.execPath, [...nodeArgs, ...loader, ...args], { env: { ...process.env, ...env }, stdio: ['ignore', stdout, 'inherit'] });
  for (let i = 0; i < 300; i++) {
    if (child.exitCode !== null) throw new Error(`${args.join(' ')} exited with ${child.exitCode}`);
    try {
      // Any HTTP answer means the process is listening; health endpoints answer 200 once ready.
      const res = await fetch(readyUrl);
      if (res.ok || !readyUrl.includes('/health/')) break;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    child,
    async stop() {
      if (child.exitCode !== null) return;
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await exited;
    },
    peakRssMb() {
      const status = readFileSync(`/proc/${child.pid}/status`, 'utf8');
      const kb = Number(/VmHWM:\s+(\d+)/.exec(status)?.[1] ?? 0);
      return Math.round(kb / 1024);
    },
  };
}

/** Linux reports /proc's CPU times in USER_HZ ticks, 100 a second on every architecture Node runs on. */
export const MS_PER_TICK = 10;

/** utime, stime, cutime and cstime of /proc/<pid>/stat in ticks, or null when the process is gone. */
function cpuTicks(pid: number): [number, number, number, number] | null {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
  } catch {
    return null;
  }
  // The command name, in parentheses, may hold spaces: the fields are counted after its last `)`.
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ').map(Number);
  return [f[11] ?? 0, f[12] ?? 0, f[13] ?? 0, f[14] ?? 0];
}

/** CPU time (user + system, every thread) in ms these processes have used so far. */
export function cpuMsOf(pids: number[]): number {
  return pids.reduce((ms, pid) => {
    const t = cpuTicks(pid);
    return t ? ms + (t[0] + t[1]) * MS_PER_TICK : ms;
  }, 0);
}

/** CPU time in ms of this process's children that have exited and been reaped so far. */
export function exitedChildrenCpuMs(): number {
  const t = cpuTicks(process.pid);
  return t ? (t[2] + t[3]) * MS_PER_TICK : 0;
}

/**
 * CPU time in ms every PostgreSQL process on this machine has used so far, the backends that have
 * exited included: a backend's time joins its postmaster's reaped-children time (cutime, cstime)
 * as it exits, so the difference of two readings counts the connections that closed between them.
 */
export function postgresCpuMs(): number {
  let ticks = 0;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let comm: string;
    try {
      comm = readFileSync(`/proc/${entry}/comm`, 'latin1').trim();
    } catch {
      continue;
    }
    if (comm !== 'postgres') continue;
    const t = cpuTicks(Number(entry));
    if (t) ticks += t[0] + t[1] + t[2] + t[3];
  }
  return ticks * MS_PER_TICK;
}

/** A fresh PostgreSQL database for one run, or null when PostgreSQL cannot be reached. */
export async function freshDatabase(adminUrl: string, prefix: string): Promise<{ url: string; drop: () => Promise<void> } | null> {
  const name = `${prefix}_${Date.now()}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  try {
    await admin.connect();
    await admin.query(`CREATE DATABASE ${name}`);
  } catch (err) {
    console.log(`PostgreSQL unavailable (${(err as Error).message})`);
    return null;
  } finally {
    await admin.end().catch(() => undefined);
  }
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    drop: async () => {
      const c = new pg.Client({ connectionString: adminUrl });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await c.end();
    },
  };
}

/** A partner made through the admin API. */
export async function createPartner(adminUrl: string, adminToken: string, name: string): Promise<{ id: string; apiKey: string }> {
  const res = await fetch(`${adminUrl}/admin/partners`, {
    method: 'POST',
    headers: { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name }),
  });
  if (!res.ok) throw new Error(`POST /admin/partners: ${res.status} ${await res.text()}`);
  return (await res.json()) as { id: string; apiKey: string };
}

/** The p-th percentile of ascending samples (nearest rank); NaN when there are none. */
export function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1))] ?? NaN;
}

/** Per-key limits no bench load reaches: a bench spreads its rate over a few partners' keys. */
export const UNLIMITED_RATES = { RATE_LIMIT_PER_SECOND: '1000000', RATE_LIMIT_PER_MINUTE: '10000000', RATE_LIMIT_PER_HOUR: '100000000' };

/**
 * A new PGlite data directory on disk, as the service's default (`./.data`) is on a fresh clone,
 * removed when the bench ends.
 */
function freshDataDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'bench-pglite-'));
  process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** Environment for an API child process wired to a simulator, on PGlite (on disk, as by default) unless a database is given. */
export function apiEnv(opts: { port: number; adminPort: number; adminToken: string; simulatorUrl: string; databaseUrl: string | null; extra?: Record<string, string> }): Record<string, string> {
  const env: Record<string, string> = {
    APP_ENV: 'local',
    PORT: String(opts.port),
    ADMIN_PORT: String(opts.adminPort),
    ADMIN_TOKEN: opts.adminToken,
    MINISTRY_MOF_URL: opts.simulatorUrl,
    MINISTRY_ETAX_URL: opts.simulatorUrl,
    MINISTRY_POLICE_URL: opts.simulatorUrl,
    LOG_LEVEL: 'warn',
    ...opts.extra,
  };
  if (opts.databaseUrl) env.DATABASE_URL = opts.databaseUrl;
  else env.DATA_DIR ??= freshDataDir();
  return env;
}

export type ServiceRole = 'all' | 'api' | 'worker';

/**
 * CPU priority (nice) of a `worker` process that shares the host with `api` processes: the
 * partner's requests go first and the background work takes the time between them, as
 * compose.yaml's `cpu_shares` gives it. An `all` process cannot split its one event loop so.
 */
export const WORKER_NICE = 10;

export interface RoleSettings {
  apiEntry: string;
  apiNodeFlags: string[];
  adminToken: string;
  simulatorUrl: string;
  databaseUrl: string;
  extra?: Record<string, string>;
  /** Settings of one role's processes only, on top of `extra`. */
  roleExtra?: Partial<Record<ServiceRole, Record<string, string>>>;
}

/**
 * One service process per entry of `roles` (PROCESS_ROLE) on one database, each ready before the
 * next starts: the API base URL of every `all` or `api` process, and the first one's admin URL.
 * A process that fails to start stops the ones started before it.
 */
export async function startRoles(roles: ServiceRole[], s: RoleSettings): Promise<{ procs: Proc[]; apis: string[]; adminUrl: string }> {
  const procs: Proc[] = [];
  const apis: string[] = [];
  let adminUrl = '';
  try {
    for (const role of roles) {
      const [port, adminPort] = [await freePort(), await freePort()];
      const env = apiEnv({ port, adminPort, adminToken: s.adminToken, simulatorUrl: s.simulatorUrl, databaseUrl: s.databaseUrl, extra: { PROCESS_ROLE: role, ...s.extra, ...s.roleExtra?.[role] } });
      const ready = role === 'worker' ? `http://127.0.0.1:${adminPort}/health/ready` : `http://127.0.0.1:${port}/api/v1/health/ready`;
      const proc = await startProcess([s.apiEntry], env, ready, s.apiNodeFlags);
      procs.push(proc);
      if (role === 'worker') {
        if (proc.child.pid !== undefined) setPriority(proc.child.pid, WORKER_NICE);
        continue;
      }
      apis.push(`http://127.0.0.1:${port}/api/v1`);
      adminUrl ||= `http://127.0.0.1:${adminPort}`;
    }
  } catch (err) {
    for (const p of procs.reverse()) await p.stop();
    throw err;
  }
  return { procs, apis, adminUrl };
}

/** A webhook body as the benches read it. */
export interface HookBody {
  event: string;
  eventId: string;
  data: { id?: string };
}

export interface HookReceiver {
  server: Server;
  url: string;
  /** First arrival (epoch ms) per key that `keyOf` gives a body (null: not recorded). */
  arrivals: Map<string, number>;
}

/** A webhook receiver answering 200 at once, recording the first arrival of each key. */
export function hookReceiver(keyOf: (body: HookBody) => string | null): Promise<HookReceiver> {
  const arrivals = new Map<string, number>();
  const server = createHttpServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const at = Date.now();
      const key = keyOf(JSON.parse(Buffer.concat(chunks).toString('utf8')) as HookBody);
      if (key && !arrivals.has(key)) arrivals.set(key, at);
      res.end('ok');
    });
  });
  return new Promise((resolve) => {
    server.listen(0, '127.0.0.1', () => {
      const addr = server.address();
      resolve({ server, arrivals, url: `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}/hook` });
    });
  });
}

/** A JSON call that must succeed. */
export async function fetchJson(url: string, init: RequestInit = {}): Promise<Record<string, unknown>> {
  const res = await fetch(url, init);
  if (!res.ok) throw new Error(`${init.method ?? 'GET'} ${url}: ${res.status} ${await res.text()}`);
  return (await res.json()) as Record<string, unknown>;
}

/** What share of the machine's CPU time was busy, by /proc/stat, between two readings. */
function cpuTimes(): { busy: number; total: number } {
  const fields = readFileSync('/proc/stat', 'latin1').split('\n')[0]?.trim().split(/\s+/).slice(1).map(Number) ?? [];
  const total = fields.reduce((a, b) => a + b, 0);
  // user nice system idle iowait ...: idle and iowait are the idle time.
  return { busy: total - (fields[3] ?? 0) - (fields[4] ?? 0), total };
}

export interface Machine {
  /** Load average (1 min) at the start and the end of the phase. */
  load: [number, number];
  /** Busy share of all CPUs over the phase, every process on the machine counted. */
  busyPct: number;
}

/** `run`, and what the whole machine did meanwhile. */
export async function observed<T>(run: () => Promise<T>): Promise<{ value: T; machine: Machine }> {
  const load0 = loadavg()[0] ?? 0;
  const cpu0 = cpuTimes();
  const value = await run();
  const cpu1 = cpuTimes();
  const busyPct = Math.round((100 * (cpu1.busy - cpu0.busy)) / Math.max(1, cpu1.total - cpu0.total));
  return { value, machine: { load: [load0, loadavg()[0] ?? 0], busyPct } };
}

export interface Teardown {
  /** Holds `stop` until the returned release runs it (once); whatever is still held is stopped on SIGINT or SIGTERM. */
  hold(label: string, stop: () => Promise<void>): () => Promise<void>;
  /**
   * Makes something with `create` and holds it with `stop`: a signal that arrives while it is being
   * made waits for it, then stops it with the rest. The value, and its release.
   */
  acquire<T>(label: string, create: () => Promise<T>, stop: (value: T) => Promise<void>): Promise<{ value: T; release: () => Promise<void> }>;
  /**
   * Runs the bench. After a signal, the work under way fails as what it uses is stopped: that
   * failure waits for the teardown, which ends the process, instead of ending it first.
   */
  run(main: () => Promise<void>): Promise<void>;
}

/**
 * What a bench has started and not yet stopped (processes, clusters, directories): a failure
 * unwinds through each release's `finally`, and a signal, which unwinds nothing, stops whatever
 * is still held or being made, newest first, before the bench exits.
 */
export function createTeardown(): Teardown {
  const held: { label: string; stop: () => Promise<void> }[] = [];
  const making = new Set<Promise<unknown>>();
  let stopping: Promise<void> | null = null;
  const stopAll = async (signal: NodeJS.Signals) => {
    console.error(`\n${signal}: stopping what the bench started`);
    await Promise.allSettled([...making]);
    for (const entry of held.splice(0).reverse()) {
      try {
        await entry.stop();
      } catch (err) {
        console.error(`  could not stop ${entry.label}: ${(err as Error).message}`);
      }
    }
    process.exit(signal === 'SIGINT' ? 130 : 143);
  };
  const onSignal = (signal: NodeJS.Signals) => {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    stopping = stopAll(signal);
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  const hold = (label: string, stop: () => Promise<void>) => {
    const entry = { label, stop };
    held.push(entry);
    return async () => {
      const i = held.indexOf(entry);
      if (i < 0) return;
      held.splice(i, 1);
      await stop();
    };
  };
  return {
    hold,
    async acquire(label, create, stop) {
      const made = create().then((value) => ({ value, release: hold(label, () => stop(value)) }));
      making.add(made);
      try {
        return await made;
      } finally {
        making.delete(made);
      }
    },
    async run(main) {
      try {
        await main();
      } catch (err) {
        if (stopping) await stopping;
        throw err;
      }
    },
  };
}
