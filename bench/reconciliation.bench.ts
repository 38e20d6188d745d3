/**
 * Cost of the daily reconciliation at volume: millions of payments in PostgreSQL, a busy finance
 * day of about 100,000 settled payments over the three ministry systems, under the production
 * heap cap. Run with `npm run bench:reconciliation` (needs DATABASE_URL; a scratch database is
 * created and dropped). The ministries' settlement files are built from the seeded rows (with
 * dropped entries, changed amounts and settled payments still `submitted` here) and handed to the
 * service by an in-process adapter, so the figure is the service's own cost: database reads,
 * auto-confirmations and discrepancy writes.
 */
import { performance } from 'node:perf_hooks';
import { sql } from 'kysely';
import { loadConfig } from '../src/config/config.js';
import { freshDatabase } from './bench-processes.js';
import { createDatabase, migrateToLatest, type Db } from '../src/db/database.js';
import { createPaymentRepository } from '../src/payments/payment.repository.js';
import { createInvoiceRepository } from '../src/db/repositories/invoice.repository.js';
import { createOutbox } from '../src/db/outbox.statements.js';
import { createMinistryCancellationRepository } from '../src/payments/ministry-cancellation.repository.js';
import { createPaymentEnder } from '../src/payments/payment-end.service.js';
import { createReconciliationRepository } from '../src/db/repositories/reconciliation.repository.js';
import { createAuditRepository } from '../src/db/repositories/audit.repository.js';
import { createPaymentResolver } from '../src/payments/payment-resolution.service.js';
import { createReconciliationService } from '../src/services/reconciliation.service.js';
import { financeDayBounds } from '../src/domain/finance-day.js';
import { systemClock } from '../src/domain/clock.port.js';
import { SOURCES, type Source } from '../src/domain/vocabulary.js';
import type { MinistryAdapter, MinistryAdapters, SettlementEntry } from '../src/domain/ministry.port.js';

const ROWS = Number(process.argv.find((a) => a.startsWith('--rows='))?.slice(7) ?? 2_000_000);
/** The seeded history spans this many finance days, so the measured day holds ROWS / DAYS payments. */
const DAYS = 20;
const DAY = '2026-06-15';

const uuid = (prefix: string, n: string) => `('${prefix}-0000-4000-8000-' || lpad(to_hex(${n}), 12, '0'))::uuid`;

function seedStatements(rows: number): string[] {
  const { from } = financeDayBounds(DAY);
  const start = from.toISOString();
  return [
    `INSERT INTO partners (id, name, qr_standard, environment)
       SELECT ${uuid('00000000', 'g')}, 'Bank ' || g, 'qrpay', 'sandbox' FROM generate_series(1, 200) g`,
    `INSERT INTO invoices (id, source, ref_num, description, amount, billed_amount, status, payee_id, payee_name)
       SELECT ${uuid('10000000', 'g')}, (ARRAY['mof','etax','police'])[1 + g % 3], 'REF-' || g, 'volume', 1000, 1000, 'paid', 'ORG', 'Org'
       FROM generate_series(1, ${rows}) g`,
    // Spread over DAYS finance days ending with the measured one; 98% confirmed, 1% still submitted, 1% canceled.
    `INSERT INTO payments (id, partner_id, invoice_id, source, amount, status, submitted_at, paid_at, created_at)
       SELECT ${uuid('20000000', 'g')}, ${uuid('00000000', '1 + g % 200')}, ${uuid('10000000', 'g')},
              (ARRAY['mof','etax','police'])[1 + g % 3], 1000,
              CASE WHEN (g / ${DAYS}) % 100 = 98 THEN 'submitted' WHEN (g / ${DAYS}) % 100 = 99 THEN 'canceled' ELSE 'confirmed' END,
              t, CASE WHEN (g / ${DAYS}) % 100 = 98 THEN NULL ELSE t END, t
       FROM (SELECT g, '${start}'::timestamptz - ((g % ${DAYS}) * interval '1 day') + ((g / ${DAYS}) % 86000) * interval '1 second' AS t
             FROM generate_series(1, ${rows}) g) s`,
    `INSERT INTO payment_invoices (payment_id, invoice_id, position, active)
       SELECT id, invoice_id, 0, status IN ('submitted', 'confirmed') FROM payments`,
    `ANALYZE`,
  ];
}

/** The ministry's view of the day: every payment settled that day, minus and plus what goes wrong. */
async function settlementFiles(db: Db): Promise<Record<Source, SettlementEntry[]>> {
  const { from, to } = financeDayBounds(DAY);
  const { rows } = await sql<{ id: string; source: Source; ref_num: string; n: number }>`
    SELECT p.id, p.source, i.ref_num, row_number() OVER (ORDER BY p.id)::int AS n
    FROM payments p JOIN invoices i ON i.id = p.invoice_id
    WHERE p.created_at >= ${from} AND p.created_at < ${to} AND p.status IN ('confirmed', 'submitted', 'canceled')`.execute(db);
  const files: Record<Source, SettlementEntry[]> = { mof: [], etax: [], police: [] };
  for (const r of rows) {
    if (r.n % 1000 === 1) continue; // missing at the ministry
    const amount = r.n % 1000 === 2 ? '999' : '1000';
    files[r.source].push({ paymentId: r.id, refNum: r.ref_num, amount, payerReg: 'R', payerName: 'N', description: 'volume', date: `${DAY}T04:00:00.000Z` });
  }
  for (let i = 0; i < 100; i++) {
    files.mof.push({ paymentId: `MINISTRY-ONLY-${i}`, refNum: `X-${i}`, amount: '1000', payerReg: 'R', payerName: 'N', description: 'x', date: `${DAY}T04:00:00.000Z` });
  }
  return files;
}

function adaptersFor(files: Record<Source, SettlementEntry[]>): MinistryAdapters {
  const unused = () => Promise.reject(new Error('not used by the reconciliation bench'));
  const adapter = (source: Source): MinistryAdapter => ({
    source,
    search: unused,
    getByRef: unused,
    submitPayment: unused,
    getPayment: unused,
    cancelPayment: unused,
    settlement: async () => files[source],
  });
  return { mof: adapter('mof'), etax: adapter('etax'), police: adapter('police') };
}

async function measure(db: Db) {
  const files = await settlementFiles(db);
  const ministries = adaptersFor(files);
  const payments = createPaymentRepository(db, systemClock);
  const events = createOutbox({ now: systemClock, firstAttemptDelayMs: 0 });
  const cancellations = createMinistryCancellationRepository(db);
  const resolver = createPaymentResolver({
    payments,
    invoices: createInvoiceRepository(db, systemClock),
    events,
    ministries,
    // confirm() is all reconciliation uses; it never submits, ends or cancels.
    submitter: { submit: () => Promise.reject(new Error('unused')), neverReceived: () => Promise.reject(new Error('unused')) },
    ender: createPaymentEnder({ payments, events, cancellations, expiryMs: 3_600_000, now: systemClock }),
    cancellations,
    ministryCancellation: { attempt: () => Promise.reject(new Error('unused')) },
    expiryMs: 3_600_000,
    unknownOutcomeMs: 3_600_000,
    cancelGraceMs: 0,
    now: systemClock,
  });
  const service = createReconciliationService({
    reconciliations: createReconciliationRepository(db),
    ministries,
    resolver,
    audit: createAuditRepository(db),
    settings: { scheduleAtMinutes: 120, retryMs: 60_000, leaseMs: 300_000, waitMs: 0 },
    log: { info: () => undefined, warn: (o: unknown) => console.warn(o), error: (o: unknown) => console.error(o) },
    now: systemClock,
  });
  let peakHeap = 0;
  const sampler = setInterval(() => (peakHeap = Math.max(peakHeap, process.memoryUsage().heapUsed)), 20);
  const results: string[] = [];
  for (const label of ['first run (auto-confirms, writes discrepancies)', 'rerun (idempotent)']) {
    const start = performance.now();
    const run = await service.run(DAY, 'bench');
    const ms = performance.now() - start;
    results.push(`| ${label} | ${(ms / 1000).toFixed(1)} | ${run.matched.toLocaleString('en')} | ${run.auto_confirmed.toLocaleString('en')} | ${run.discrepancies.toLocaleString('en')} | ${run.status} |`);
  }
  clearInterval(sampler);
  const settled = SOURCES.reduce((n, s) => n + files[s].length, 0);
  return { results, settled, peakHeapMb: peakHeap / 1024 / 1024 };
}

async function main(): Promise<void> {
  const base = loadConfig().databaseUrl;
  if (!base) throw new Error('DATABASE_URL is required (PostgreSQL)');
  const scratch = await freshDatabase(base, 'bench_reconcile');
  if (!scratch) throw new Error('PostgreSQL is unreachable');
  const db = await createDatabase({ databaseUrl: scratch.url, dataDir: '', onConnectionError: () => undefined });
  try {
    await migrateToLatest(db);
    const seedStart = performance.now();
    for (const statement of seedStatements(ROWS)) await sql.raw(statement).execute(db);
    console.log(`seeded ${ROWS.toLocaleString('en')} payments over ${DAYS} finance days in ${((performance.now() - seedStart) / 1000).toFixed(0)} s`);
    const { results, settled, peakHeapMb } = await measure(db);
    console.log(`\nfinance day ${DAY}: ${settled.toLocaleString('en')} settlement entries over 3 systems\n`);
    console.log('| run | seconds | matched | auto-confirmed | discrepancies | status |\n|---|---|---|---|---|---|');
    for (const line of results) console.log(line);
    console.log(`\npeak JS heap during the runs: ${peakHeapMb.toFixed(0)} MB (heap cap ${process.execArgv.find((a) => a.startsWith('--max-old-space-size')) ?? 'default'})`);
  } finally {
    await db.destroy();
    await scratch.drop();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
