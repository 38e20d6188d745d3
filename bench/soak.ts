import { randomUUID } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { apiEnv, freePort, freshDatabase, startProcess } from './bench-processes.js';

/**
 * `npm run soak [-- --seconds=120]`: many partner keys send mixed traffic (searches, reads,
 * payments, status checks, cancels) at just under the default rate limits for a few minutes.
 * Fails (exit 1) on any 5xx or 429, any unexpected status, or memory that keeps growing.
 */
const SECONDS = Number(process.argv.find((a) => a.startsWith('--seconds='))?.slice(10) ?? 120);
const KEYS = 40;
/** Per key: under 60/min and 5/s, so the default limits are never hit. */
const PER_KEY_INTERVAL_MS = 1100;
const PG_URL = process.argv.find((a) => a.startsWith('--pg='))?.slice(5) ?? 'postgres://postgres@127.0.0.1:5432/test';
/** Where the summary goes; CI writes it to artifacts/ so a run leaves the clone as it found it. */
const OUT = process.argv.find((a) => a.startsWith('--out='))?.slice(6) ?? 'bench/results/soak.json';
const ADMIN_TOKEN = 'soak-admin-token';

function fixtures(): string {
  const invoices = [];
  for (let k = 0; k < KEYS; k++) {
    for (let i = 0; i < 6; i++) {
      invoices.push({
        source: (['mof', 'etax', 'police'] as const)[i % 3],
        refNum: `SOAK-${k}-${i}`,
        description: 'Soak',
        amount: 2000 + i,
        status: 'open',
        dueDate: '2099-01-01T00:00:00.000Z',
        issuedAt: null,
        payer: { register: `SK${k}`, name: 'Soak' },
        payee: { id: 'ORG-1', name: 'Org' },
      });
    }
  }
  const path = join(tmpdir(), `soak-fixtures-${process.pid}.json`);
  writeFileSync(path, JSON.stringify({ invoices }));
  return path;
}

async function database(): Promise<{ url: string | null; drop: () => Promise<void> }> {
  const db = await freshDatabase(PG_URL, 'soak');
  if (db) return db;
  console.log('soaking on PGlite');
  return { url: null, drop: async () => undefined };
}

interface Stats {
  byStatus: Map<string, number>;
  unexpected: string[];
}

function count(stats: Stats, label: string, status: number, allowed: number[]): void {
  const k = `${label} ${status}`;
  stats.byStatus.set(k, (stats.byStatus.get(k) ?? 0) + 1);
  if (!allowed.includes(status)) stats.unexpected.push(k);
}

async function keyLoop(api: string, key: string, k: number, until: number, stats: Stats): Promise<void> {
  const call = async (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) => {
    const res = await fetch(`${api}${path}`, {
      method,
      headers: { 'x-api-key': key, ...(body ? { 'content-type': 'application/json' } : {}), ...headers },
      body: body ? JSON.stringify(body) : undefined,
    });
    const text = await res.text();
    return { status: res.status, body: text ? (JSON.parse(text) as Record<string, unknown>) : {} };
  };
  const tick = () => new Promise((r) => setTimeout(r, PER_KEY_INTERVAL_MS));
  const search = await call('GET', `/invoices?ttd=SK${k}`);
  count(stats, 'search', search.status, [200]);
  const ids = ((search.body.invoices as { id: string }[] | undefined) ?? []).map((i) => i.id);
  let step = 0;
  while (Date.now() < until) {
    await tick();
    const invoiceId = ids[step % ids.length] as string;
    switch (step++ % 5) {
      case 0: {
        const r = await call('GET', `/invoices/${invoiceId}`);
        count(stats, 'read', r.status, [200]);
        break;
      }
      case 1: {
        const r = await call('POST', '/payments', { invoiceId }, { 'x-idempotency-key': randomUUID() });
        count(stats, 'pay', r.status, [201, 422]);
        if (r.status === 201) {
          await tick();
          const g = await call('GET', `/payments/${String(r.body.id)}`);
          count(stats, 'status', g.status, [200]);
          await tick();
          const c = await call('DELETE', `/payments/${String(r.body.id)}`);
          count(stats, 'cancel', c.status, [200, 409]);
        }
        break;
      }
      case 2: {
        const r = await call('GET', `/invoices?ttd=SK${k}`);
        count(stats, 'search', r.status, [200]);
        break;
      }
      case 3: {
        const r = await call('GET', '/reports/summary');
        count(stats, 'summary', r.status, [200]);
        break;
      }
      default: {
        const r = await call('GET', '/reports/payments?limit=10');
        count(stats, 'list', r.status, [200]);
      }
    }
  }
}

async function main(): Promise<void> {
  const db = await database();
  const [simPort, port, adminPort] = [await freePort(), await freePort(), await freePort()];
  const sim = await startProcess(['simulator/bin/simulator.ts'], { SIMULATOR_PORT: String(simPort), SIMULATOR_FIXTURES: fixtures(), SIMULATOR_AUTO_APPROVE_MS: '0' }, `http://127.0.0.1:${simPort}/`);
  const simUrl = `http://127.0.0.1:${simPort}`;
  const env = apiEnv({ port, adminPort, adminToken: ADMIN_TOKEN, simulatorUrl: simUrl, databaseUrl: db.url });
  const api = `http://127.0.0.1:${port}/api/v1`;
  const proc = await startProcess(['src/bin/api.ts'], env, `${api}/health/ready`);
  const stats: Stats = { byStatus: new Map(), unexpected: [] };
  const rss: number[] = [];
  try {
    const keys: string[] = [];
    for (let k = 0; k < KEYS; k++) {
      const res = await fetch(`http://127.0.0.1:${adminPort}/admin/partners`, {
        method: 'POST',
        headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
        body: JSON.stringify({ name: `Soak ${k}` }),
      });
      keys.push(((await res.json()) as { apiKey: string }).apiKey);
    }
    const until = Date.now() + SECONDS * 1000;
    const sampler = setInterval(() => rss.push(currentRssMb(proc.child.pid)), 5000);
    await Promise.all(keys.map((key, k) => keyLoop(api, key, k, until, stats)));
    clearInterval(sampler);
  } finally {
    await proc.stop();
    await sim.stop();
    await db.drop();
  }
  report(stats, rss);
}

function currentRssMb(pid: number | undefined): number {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    return Math.round(Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0) / 1024);
  } catch {
    return 0;
  }
}

function report(stats: Stats, rss: number[]): void {
  const total = [...stats.byStatus.values()].reduce((a, b) => a + b, 0);
  const quarter = Math.max(1, Math.floor(rss.length / 4));
  const avg = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);
  // The first quarter includes warm-up (JIT, pools); compare the second quarter with the last.
  const early = avg(rss.slice(quarter, 2 * quarter));
  const late = avg(rss.slice(-quarter));
  const flat = rss.length < 4 || late <= early * 1.25 + 10;
  mkdirSync(dirname(OUT), { recursive: true });
  const summary = { seconds: SECONDS, keys: KEYS, requests: total, byStatus: Object.fromEntries(stats.byStatus), unexpected: stats.unexpected.length, rssMb: rss, flat };
  writeFileSync(OUT, JSON.stringify(summary, null, 2));
  console.log(JSON.stringify({ ...summary, rssMb: `${rss[0] ?? 0} -> ${rss.at(-1) ?? 0} MB` }, null, 2));
  const failures = [stats.unexpected.length > 0 ? `unexpected statuses: ${[...new Set(stats.unexpected)].join(', ')}` : '', flat ? '' : `memory grew from ${early} to ${late} MB`].filter(Boolean);
  failures.forEach((f) => console.error(`soak: ${f}`));
  console.log(failures.length === 0 ? `soak: ok, ${total} requests, no errors, memory flat` : 'soak: FAILED');
  process.exitCode = failures.length === 0 ? 0 : 1;
}

await main();
