/**
 * What running the API and the background work as separate processes (PROCESS_ROLE) buys the
 * partner. A backlog of unresolved payments (the simulator never approves, so each wants a status
 * check every CONFIRM_POLL_MS) keeps the confirmation job busy, and `POST /payments` is then
 * measured at half the rate the single `all` process reached while building that backlog: once
 * with one `all` process, once with one `api` and one `worker` (at WORKER_NICE) on the same
 * PostgreSQL. Part of
 * `npm run bench` (`--endpoints=roles` runs it alone).
 */
import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createPartner, freePort, freshDatabase, startProcess, startRoles, UNLIMITED_RATES, type ServiceRole } from './bench-processes.js';
import { pacedLoad } from './paced-load.js';

const PARTNERS = 8;
const CONCURRENCY = 32;
const ADMIN_TOKEN = 'bench-roles-admin-token';
const SOURCES = ['mof', 'etax', 'police'] as const;
/** Seconds of the paced phase at least: its p99 rests on a thousand or more requests, not a handful. */
const MIN_PACED_S = 20;

export interface RolesRow {
  layout: string;
  backlog: number;
  rate: number;
  p50: number;
  p99: number;
  errors: number;
}

export interface RolesSettings {
  pgUrl: string;
  apiEntry: string;
  simulatorEntry: string;
  apiNodeFlags: string[];
  durationS: number;
  backlog: number;
}

interface Layout {
  name: string;
  roles: ServiceRole[];
}

const LAYOUTS: Layout[] = [
  { name: 'all (one process)', roles: ['all'] },
  { name: 'api + worker', roles: ['api', 'worker'] },
];

function invoicesOf(layout: number, partner: number, count: number) {
  return Array.from({ length: count }, (_, i) => ({
    source: SOURCES[i % 3],
    refNum: `RB${layout}-${partner}-${i}`,
    description: 'Roles invoice',
    amount: 1000 + (i % 500),
    status: 'open',
    dueDate: '2099-01-01T00:00:00.000Z',
    issuedAt: '2026-01-01T00:00:00.000Z',
    payer: { register: `RB${layout}-${partner}`, name: 'Roles Payer' },
    payee: { id: 'ORG-1', name: 'Org' },
  }));
}

async function json(url: string, init: RequestInit = {}): Promise<Record<string, unknown>> {
  const res = await fetch(url, init);
  if (!res.ok) throw new Error(`${init.method ?? 'GET'} ${url}: ${res.status} ${await res.text()}`);
  return (await res.json()) as Record<string, unknown>;
}

/** Each partner's invoices, planted at the simulator and found by the partner's search; `{ key, id }` in paying order. */
async function plantInvoices(api: string, adminUrl: string, simUrl: string, layout: number, perPartner: number): Promise<{ key: string; id: string }[][]> {
  const out: { key: string; id: string }[][] = [];
  for (let p = 0; p < PARTNERS; p++) {
    const { apiKey } = await createPartner(adminUrl, ADMIN_TOKEN, `Roles ${layout}-${p}`);
    const invoices = invoicesOf(layout, p, perPartner);
    for (let i = 0; i < invoices.length; i += 1000) {
      await json(`${simUrl}/__control/invoices`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ invoices: invoices.slice(i, i + 1000) }) });
    }
    const found = await json(`${api}/invoices?ttd=RB${layout}-${p}`, { headers: { 'x-api-key': apiKey } });
    out.push((found.invoices as { id: string }[]).map((i) => ({ key: apiKey, id: i.id })));
  }
  return out;
}

/** Pays `count` invoices flat out with CONCURRENCY clients; payments per second. */
async function payFlatOut(api: string, next: () => { key: string; id: string }, count: number): Promise<number> {
  let left = count;
  const started = Date.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (left-- > 0) {
        const o = next();
        const res = await fetch(`${api}/payments`, { method: 'POST', headers: { 'x-api-key': o.key, 'content-type': 'application/json' }, body: JSON.stringify({ invoiceId: o.id }) });
        await res.arrayBuffer();
      }
    }),
  );
  return Math.round(count / ((Date.now() - started) / 1000));
}

export async function rolesBench(s: RolesSettings): Promise<RolesRow[] | null> {
  const fixtures = join(tmpdir(), `roles-fixtures-${process.pid}.json`);
  writeFileSync(fixtures, JSON.stringify({ invoices: invoicesOf(-1, 0, 1) }));
  const rows: RolesRow[] = [];
  const durationS = Math.max(s.durationS, MIN_PACED_S);
  let rate = 0;
  for (const [n, layout] of LAYOUTS.entries()) {
    const db = await freshDatabase(s.pgUrl, 'bench_roles');
    if (!db) return null;
    const simPort = await freePort();
    // Never approves: every payment stays submitted and wants its checks.
    const sim = await startProcess([s.simulatorEntry], { SIMULATOR_PORT: String(simPort), SIMULATOR_FIXTURES: fixtures, SIMULATOR_AUTO_APPROVE_MS: '0', LOG_LEVEL: 'warn' }, `http://127.0.0.1:${simPort}/mof/api/invoices/NOPE`);
    const simUrl = `http://127.0.0.1:${simPort}`;
    const { procs, apis, adminUrl } = await startRoles(layout.roles, { ...s, adminToken: ADMIN_TOKEN, simulatorUrl: simUrl, databaseUrl: db.url, extra: UNLIMITED_RATES });
    const api = apis[0] as string;
    try {
      const perPartner = Math.ceil(s.backlog / PARTNERS) + Math.ceil((Math.max(rate, 400) * durationS) / PARTNERS) + 1;
      const invoices = await plantInvoices(api, adminUrl, simUrl, n, perPartner);
      let cursor = 0;
      const next = () => {
        const o = invoices[cursor % PARTNERS]?.[Math.floor(cursor / PARTNERS)] as { key: string; id: string };
        cursor++;
        return o;
      };
      const backlogRate = await payFlatOut(api, next, s.backlog);
      // Half the single process's own rate, the same for every layout.
      if (rate === 0) rate = Math.max(1, Math.floor(backlogRate / 2));
      const half = await pacedLoad(new URL(api).origin, rate, durationS, () => {
        const o = next();
        return { method: 'POST', path: '/api/v1/payments', headers: { 'x-api-key': o.key, 'content-type': 'application/json' }, body: JSON.stringify({ invoiceId: o.id }) };
      });
      rows.push({ layout: layout.name, backlog: s.backlog, rate, p50: half.p50, p99: half.p99, errors: half.non2xx + half.errors });
      console.log(`roles     ${layout.name.padEnd(18)} POST /payments with ${s.backlog} payments awaiting checks (built at ${backlogRate}/s): p50 ${half.p50} ms  p99 ${half.p99} ms @ ${rate}/s  non-2xx ${half.non2xx + half.errors}`);
    } finally {
      for (const p of procs.reverse()) await p.stop();
      await sim.stop();
      await db.drop();
    }
  }
  return rows;
}

export function rolesTable(rows: RolesRow[]): string {
  return [
    `PROCESS_ROLE: \`POST /payments\` at half the single process's rate while ${rows[0]?.backlog ?? 0} payments await confirmation checks (the simulator never approves):`,
    '',
    '| layout | payments/s | p50 ms | p99 ms | non-2xx |',
    '|---|---|---|---|---|',
    ...rows.map((r) => `| ${r.layout} | ${r.rate} | ${r.p50} | ${r.p99} | ${r.errors} |`),
  ].join('\n');
}
