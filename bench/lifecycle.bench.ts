/**
 * The partner's wait after paying: partners pay at a steady rate while the simulator approves each
 * payment a short while after it is submitted, and the bench measures, per ministry system,
 * approval -> `confirmed` in the database and approval -> `payment.confirmed` at a real webhook
 * receiver. A second phase makes one system's status checks slow; the other systems' figures
 * must not move. Part of `npm run bench` (`--endpoints=lifecycle` runs it alone).
 */
import { createServer, type Server } from 'node:http';
import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { loadConfig } from '../src/config.js';
import { apiEnv, freePort, freshDatabase, startProcess } from './bench-processes.js';

const SOURCES = ['mof', 'etax', 'police'] as const;
type Source = (typeof SOURCES)[number];
const APPROVE_AFTER_MS = 200;
const PARTNERS = 8;
const SLOW_SOURCE: Source = 'etax';
const SLOW_STATUS_MS = 1500;
const ADMIN_TOKEN = 'bench-lifecycle-admin-token';

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
  rate: number;
  durationS: number;
  confirmPollMs: number;
  webhookPollMs: number;
  rows: LifecycleRow[];
}

interface Settings {
  pgUrl: string;
  /** Payments per second over all partners. */
  rate: number;
  durationS: number;
  apiEntry: string;
  simulatorEntry: string;
  apiNodeFlags: string[];
}

function fixtures(perPhase: number): string {
  const invoices = [];
  for (const phase of [0, 1]) {
    for (let p = 0; p < PARTNERS; p++) {
      for (let i = 0; i < perPhase; i++) {
        invoices.push({
          source: SOURCES[i % 3],
          refNum: `LC${phase}-${p}-${i}`,
          description: 'Lifecycle invoice',
          amount: 1000 + (i % 500),
          status: 'open',
          dueDate: '2099-01-01T00:00:00.000Z',
          issuedAt: '2026-01-01T00:00:00.000Z',
          payer: { register: `LC${phase}-${p}`, name: 'Lifecycle Payer' },
          payee: { id: 'ORG-1', name: 'Org' },
        });
      }
    }
  }
  const path = join(tmpdir(), `lifecycle-fixtures-${process.pid}.json`);
  writeFileSync(path, JSON.stringify({ invoices }));
  return path;
}

/** Records when each payment's `payment.confirmed` arrives. */
function receiver(): Promise<{ server: Server; url: string; arrivals: Map<string, number> }> {
  const arrivals = new Map<string, number>();
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const at = Date.now();
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { event: string; data: { id?: string } };
      if (body.event === 'payment.confirmed' && body.data.id && !arrivals.has(body.data.id)) arrivals.set(body.data.id, at);
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

async function json(url: string, init: RequestInit = {}): Promise<Record<string, unknown>> {
  const res = await fetch(url, init);
  if (!res.ok) throw new Error(`${init.method ?? 'GET'} ${url}: ${res.status} ${await res.text()}`);
  return (await res.json()) as Record<string, unknown>;
}

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1))] ?? NaN;

interface Partner {
  key: string;
  /** Invoice ids to pay, per phase, in order. */
  invoices: string[][];
}

async function setUpPartners(api: string, adminUrl: string, hookUrl: string): Promise<Partner[]> {
  const partners: Partner[] = [];
  for (let p = 0; p < PARTNERS; p++) {
    const made = await json(`${adminUrl}/admin/partners`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: `Lifecycle ${p}` }),
    });
    const key = made.apiKey as string;
    const headers = { 'x-api-key': key, 'content-type': 'application/json' };
    await json(`${api}/webhooks`, { method: 'POST', headers, body: JSON.stringify({ url: hookUrl, secret: 'lifecycle-bench-secret-0123', events: ['payment.confirmed'] }) });
    const invoices: string[][] = [];
    for (const phase of [0, 1]) {
      // The search stores the invoices and gives this partner access to them.
      const found = await json(`${api}/invoices?ttd=LC${phase}-${p}`, { headers });
      invoices.push((found.invoices as { id: string }[]).map((i) => i.id));
    }
    partners.push({ key, invoices });
  }
  return partners;
}

/** Open-loop: every 10 ms, the payments due by then, round robin over the partners. */
async function payAtRate(api: string, partners: Partner[], phase: number, rate: number, durationS: number): Promise<number> {
  const total = Math.floor(rate * durationS);
  const start = Date.now();
  const inFlight: Promise<unknown>[] = [];
  let sent = 0;
  let failed = 0;
  while (sent < total) {
    const due = Math.min(total, Math.floor(((Date.now() - start) / 1000) * rate));
    for (; sent < due; sent++) {
      const partner = partners[sent % partners.length] as Partner;
      const invoiceId = partner.invoices[phase]?.[Math.floor(sent / partners.length)];
      inFlight.push(
        fetch(`${api}/payments`, { method: 'POST', headers: { 'x-api-key': partner.key, 'content-type': 'application/json' }, body: JSON.stringify({ invoiceId }) })
          .then(async (res) => {
            await res.arrayBuffer();
            if (res.status !== 201) failed++;
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

/** Waits until every approved payment is confirmed and delivered, or 60 s. */
async function collect(simUrl: string, dbUrl: string, arrivals: Map<string, number>, since: number, phase: string): Promise<LifecycleRow[]> {
  const client = new pg.Client({ connectionString: dbUrl });
  await client.connect();
  try {
    let approved: Approval[] = [];
    let confirmedAt = new Map<string, number>();
    for (let i = 0; i < 600; i++) {
      approved = await approvals(simUrl, since);
      const { rows } = await client.query<{ id: string; at: Date }>(`SELECT id, updated_at AS at FROM payments WHERE status = 'confirmed' AND id = ANY($1::uuid[])`, [approved.map((a) => a.paymentId)]);
      confirmedAt = new Map(rows.map((r) => [r.id, r.at.getTime()]));
      if (approved.length > 0 && approved.every((a) => confirmedAt.has(a.paymentId) && arrivals.has(a.paymentId))) break;
      await sleep(100);
    }
    return SOURCES.map((source) => {
      const mine = approved.filter((a) => a.source === source);
      const db = mine.flatMap((a) => (confirmedAt.has(a.paymentId) ? [(confirmedAt.get(a.paymentId) as number) - a.at] : [])).sort((x, y) => x - y);
      const hook = mine.flatMap((a) => (arrivals.has(a.paymentId) ? [(arrivals.get(a.paymentId) as number) - a.at] : [])).sort((x, y) => x - y);
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
  } finally {
    await client.end();
  }
}

export async function lifecycleBench(s: Settings): Promise<LifecycleResult | null> {
  const db = await freshDatabase(s.pgUrl, 'bench_lifecycle');
  if (!db) return null;
  const perPhase = Math.ceil((s.rate * s.durationS) / PARTNERS) + 1;
  const hook = await receiver();
  const simPort = await freePort();
  const sim = await startProcess([s.simulatorEntry], { SIMULATOR_PORT: String(simPort), SIMULATOR_FIXTURES: fixtures(perPhase), SIMULATOR_AUTO_APPROVE_MS: String(APPROVE_AFTER_MS), LOG_LEVEL: 'warn' }, `http://127.0.0.1:${simPort}/mof/api/invoices/NOPE`, ['--no-memory-reducer']);
  const simUrl = `http://127.0.0.1:${simPort}`;
  const [port, adminPort] = [await freePort(), await freePort()];
  const env = apiEnv({
    port, adminPort, adminToken: ADMIN_TOKEN, simulatorUrl: simUrl, databaseUrl: db.url,
    // The rate is spread over a few partners; the per-key limits would turn it into 429s.
    extra: { RATE_LIMIT_PER_SECOND: '1000000', RATE_LIMIT_PER_MINUTE: '10000000', RATE_LIMIT_PER_HOUR: '100000000', MINISTRY_TIMEOUT_MS: '5000' },
  });
  const api = await startProcess([s.apiEntry], env, `http://127.0.0.1:${port}/health/ready`, s.apiNodeFlags);
  try {
    const base = `http://127.0.0.1:${port}/api/v1`;
    const partners = await setUpPartners(base, `http://127.0.0.1:${adminPort}`, hook.url);
    const rows: LifecycleRow[] = [];
    for (const [phase, label] of ['all systems answering', `${SLOW_SOURCE} status checks take ${SLOW_STATUS_MS} ms`].entries()) {
      if (phase === 1) {
        await json(`${simUrl}/__control/faults`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ source: SLOW_SOURCE, mode: 'slow', delayMs: SLOW_STATUS_MS, operation: 'status' }) });
      }
      const since = Date.now();
      const failed = await payAtRate(base, partners, phase, s.rate, s.durationS);
      if (failed > 0) console.log(`lifecycle: ${failed} payments were not accepted in phase "${label}"`);
      const phaseRows = await collect(simUrl, db.url, hook.arrivals, since, label);
      for (const r of phaseRows) console.log(`lifecycle  ${label.padEnd(36)} ${r.source.padEnd(6)} ${r.payments} payments, approval->confirmed p50 ${r.dbP50} p99 ${r.dbP99} ms, approval->webhook p50 ${r.webhookP50} p99 ${r.webhookP99} ms, missing ${r.missing}`);
      rows.push(...phaseRows);
    }
    // The service runs with the defaults, which the budget below is made of.
    const { confirmPollMs, webhookPollMs } = loadConfig({});
    return { rate: s.rate, durationS: s.durationS, confirmPollMs, webhookPollMs, rows };
  } finally {
    await api.stop();
    await sim.stop();
    hook.server.close();
    await db.drop();
  }
}

export function lifecycleTable(r: LifecycleResult): string {
  const budget = r.confirmPollMs + r.webhookPollMs + 1000;
  return [
    `Lifecycle at ${r.rate} payments/s for ${r.durationS} s per phase (simulator approves ${APPROVE_AFTER_MS} ms after submit; budget for approval -> webhook p99: CONFIRM_POLL_MS + WEBHOOK_POLL_MS + 1 s = ${budget} ms):`,
    '',
    '| phase | system | payments | approval -> confirmed p50 / p99 ms | approval -> webhook p50 / p99 ms | missing |',
    '|---|---|---|---|---|---|',
    ...r.rows.map((x) => `| ${x.phase} | ${x.source} | ${x.payments} | ${x.dbP50} / ${x.dbP99} | ${x.webhookP50} / ${x.webhookP99} | ${x.missing} |`),
  ].join('\n');
}
