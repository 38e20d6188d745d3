/**
 * Cost of the background work and the per-payment queries at realistic volume: millions of
 * payments, invoices, events, webhook attempts and idempotency keys in PostgreSQL. Run with
 * `npm run bench:volume` (needs DATABASE_URL; a scratch database is created and dropped). Each
 * query is timed over repeated runs after a warm-up; the table gives the median and the worst.
 */
import { performance } from 'node:perf_hooks';
import pg from 'pg';
import { sql } from 'kysely';
import { loadConfig } from '../src/config/config.js';
import { createDatabase, migrateToLatest, type Db } from '../src/db/database.js';
import { createPaymentRepository } from '../src/payments/payment.repository.js';
import { createMinistryCancellationRepository } from '../src/payments/ministry-cancellation.repository.js';
import { createWebhookDeliveryRepository } from '../src/db/repositories/webhook-delivery.repository.js';
import { createRetentionRepository } from '../src/db/repositories/retention.repository.js';
import { createPartitionRepository } from '../src/db/repositories/partition.repository.js';
import { createIdempotencyRepository } from '../src/db/repositories/idempotency.repository.js';
import { createInvoiceRepository } from '../src/db/repositories/invoice.repository.js';
import { systemClock } from '../src/domain/clock.port.js';

const ROWS = Number(process.argv.find((a) => a.startsWith('--rows='))?.slice(7) ?? 2_000_000);
const RUNS = 20;
/** Keeps the scratch database afterwards (its name is printed), to look at plans by hand. */
const KEEP = process.argv.includes('--keep');
const DAY = 24 * 3600 * 1000;

/** One statement per entry; each builds a table of the scratch database from generate_series. */
function seedStatements(rows: number): string[] {
  const events = Math.floor(rows / 2);
  return [
    `INSERT INTO partners (id, name, qr_standard, environment)
       SELECT ('00000000-0000-4000-8000-' || lpad(to_hex(g), 12, '0'))::uuid, 'Bank ' || g, 'qrpay', 'sandbox' FROM generate_series(1, 200) g`,
    `INSERT INTO invoices (id, source, ref_num, description, amount, billed_amount, status, payee_id, payee_name)
       SELECT ('10000000-0000-4000-8000-' || lpad(to_hex(g), 12, '0'))::uuid, (ARRAY['mof','etax','police'])[1 + g % 3], 'REF-' || g,
              'volume', 1000, 1000, CASE WHEN g % 100 < 90 THEN 'paid' ELSE 'open' END, 'ORG', 'Org'
       FROM generate_series(1, ${rows}) g`,
    // 90% confirmed, 8% canceled, 1% failed, 1% submitted (a tenth of those due now).
    `INSERT INTO payments (id, partner_id, invoice_id, source, amount, status, next_check_at, submitted_at, created_at)
       SELECT ('20000000-0000-4000-8000-' || lpad(to_hex(g), 12, '0'))::uuid,
              ('00000000-0000-4000-8000-' || lpad(to_hex(1 + g % 200), 12, '0'))::uuid,
              ('10000000-0000-4000-8000-' || lpad(to_hex(g), 12, '0'))::uuid,
              (ARRAY['mof','etax','police'])[1 + g % 3], 1000,
              CASE WHEN g % 100 < 90 THEN 'confirmed' WHEN g % 100 < 98 THEN 'canceled' WHEN g % 100 < 99 THEN 'failed' ELSE 'submitted' END,
              CASE WHEN g % 100 = 99 THEN now() + ((g % 10) - 1) * interval '1 minute' END,
              now() - interval '1 hour', now() - (g % 365) * interval '1 day'
       FROM generate_series(1, ${rows}) g`,
    `INSERT INTO payment_invoices (payment_id, invoice_id, position, active)
       SELECT id, invoice_id, 0, status IN ('submitted', 'confirmed') FROM payments`,
    `INSERT INTO webhooks (id, partner_id, url, events, secret_ciphertext)
       SELECT ('30000000-0000-4000-8000-' || lpad(to_hex(g), 12, '0'))::uuid, ('00000000-0000-4000-8000-' || lpad(to_hex(g), 12, '0'))::uuid,
              'https://example.test/hook', '["payment.confirmed"]', 'x' FROM generate_series(1, 200) g`,
    // Events spread over 180 days, half past a 90-day retention, all delivered but the newest 10,000.
    `INSERT INTO events (id, partner_id, event, payload, created_at)
       SELECT ('40000000-0000-4000-8000-' || lpad(to_hex(g), 12, '0'))::uuid, ('00000000-0000-4000-8000-' || lpad(to_hex(1 + g % 200), 12, '0'))::uuid,
              'payment.confirmed', '{}', CASE WHEN g > ${events - 10_000} THEN now() ELSE now() - (g % 180) * interval '1 day' END
       FROM generate_series(1, ${events}) g`,
    `INSERT INTO webhook_deliveries (id, webhook_id, event_id, status, attempts, next_attempt_at, created_at)
       SELECT ('50000000-0000-4000-8000-' || lpad(to_hex(g), 12, '0'))::uuid, ('30000000-0000-4000-8000-' || lpad(to_hex(1 + g % 200), 12, '0'))::uuid,
              ('40000000-0000-4000-8000-' || lpad(to_hex(g), 12, '0'))::uuid, CASE WHEN g > ${events - 10_000} THEN 'pending' ELSE 'delivered' END,
              1, now() - interval '1 minute', CASE WHEN g > ${events - 10_000} THEN now() ELSE now() - (g % 180) * interval '1 day' END
       FROM generate_series(1, ${events}) g`,
    `INSERT INTO webhook_attempts (delivery_id, webhook_id, attempt, succeeded, status_code, duration_ms, created_at)
       SELECT id, webhook_id, 1, true, 200, 20, created_at FROM webhook_deliveries WHERE status = 'delivered'`,
    // Half of the idempotency keys have expired.
    `INSERT INTO idempotency_keys (partner_id, key, request_hash, state, locked_until, response_status, created_at, expires_at)
       SELECT ('00000000-0000-4000-8000-' || lpad(to_hex(1 + g % 200), 12, '0'))::uuid, 'k-' || g, 'h', 'completed', now(), 201,
              now() - interval '3 days', now() + CASE WHEN g % 2 = 0 THEN interval '-1 day' ELSE interval '1 day' END
       FROM generate_series(1, ${events}) g`,
    `ANALYZE`,
  ];
}

async function time(label: string, run: () => Promise<unknown>): Promise<{ label: string; medianMs: number; maxMs: number }> {
  await run();
  const samples: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    const start = performance.now();
    await run();
    samples.push(performance.now() - start);
  }
  samples.sort((a, b) => a - b);
  return { label, medianMs: samples[Math.floor(RUNS / 2)] ?? NaN, maxMs: samples[RUNS - 1] ?? NaN };
}

async function measure(db: Db) {
  const payments = createPaymentRepository(db, systemClock);
  const cancellations = createMinistryCancellationRepository(db);
  const deliveries = createWebhookDeliveryRepository(db);
  const retention = createRetentionRepository(db);
  const partitions = createPartitionRepository(db);
  const idempotency = createIdempotencyRepository(db);
  const invoices = createInvoiceRepository(db, systemClock);
  const partner = '00000000-0000-4000-8000-000000000007';
  const ownIds = Array.from({ length: 300 }, (_, i) => `20000000-0000-4000-8000-${(7 + i * 200).toString(16).padStart(12, '0')}`);
  const limits = { mof: 4, etax: 4, police: 4 };
  const lease = () => new Date(Date.now() + 10_000);
  const upstream = Array.from({ length: 10 }, (_, i) => ({
    source: 'mof' as const, refNum: `REF-${3 + i * 3}`, description: 'volume', amount: '1000', status: 'open' as const,
    dueDate: null, issuedAt: null, vehicleNo: null, taxRef: null, payer: null, payee: { id: 'ORG', name: 'Org' }, year: null,
  }));
  return [
    await time('confirmation claim (12 due payments of 3 systems)', () => payments.claimDue(new Date(), lease(), limits)),
    await time('owed ministry cancellations claim', () => cancellations.claimDue(new Date(), lease(), limits)),
    await time('settlement ownership (300 payment ids)', () => payments.ownSettledIds(partner, ownIds)),
    await time('webhook delivery claim (32 slots)', () =>
      deliveries.claimDue(new Date(), lease(), { total: 32, perEndpoint: 2, perPartner: 8, endpointFree: new Map(), partnerFree: new Map() })),
    await time('retention pass: expired idempotency keys (1,000)', () => idempotency.purgeExpired(new Date(), 1000)),
    await time('retention pass with a backlog in the legacy partitions: attempts, deliveries, events (1,000 each)', async () =>
      retention.sweep(await partitions.legacyTables(), { attemptsBefore: new Date(Date.now() - 30 * DAY), eventsBefore: new Date(Date.now() - 90 * DAY) }, 1000)),
    await time('retention pass with nothing old enough', async () =>
      retention.sweep(await partitions.legacyTables(), { attemptsBefore: new Date(Date.now() - 200 * DAY), eventsBefore: new Date(Date.now() - 200 * DAY) }, 1000)),
    await time('partition pass: months ahead, and no month past retention', async () => {
      await partitions.createAhead();
      await partitions.dropExpired({ attemptsBefore: new Date(Date.now() - 30 * DAY), eventsBefore: new Date(Date.now() - 90 * DAY) });
    }),
    await time('invoice upsert of 10 held invoices (search path)', () => invoices.upsert(upstream)),
  ];
}

async function main(): Promise<void> {
  const base = loadConfig().databaseUrl;
  if (!base) throw new Error('DATABASE_URL is required (PostgreSQL)');
  const name = `bench_volume_${Date.now()}`;
  const admin = new pg.Client({ connectionString: base });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  const url = new URL(base);
  url.pathname = `/${name}`;
  const db = await createDatabase({ databaseUrl: url.toString(), dataDir: '', onConnectionError: () => undefined });
  try {
    // Seeded on the layout before monthly partitions, then moved: the history is the legacy partitions, swept row by row.
    await migrateToLatest(db, undefined, '033-cases');
    const seedStart = performance.now();
    for (const statement of seedStatements(ROWS)) await sql.raw(statement).execute(db);
    console.log(`seeded ${ROWS.toLocaleString('en')} invoices and payments, ${(ROWS / 2).toLocaleString('en')} events, deliveries, attempts and idempotency keys in ${((performance.now() - seedStart) / 1000).toFixed(0)} s`);
    const moveStart = performance.now();
    await migrateToLatest(db);
    console.log(`moved to monthly partitions in ${((performance.now() - moveStart) / 1000).toFixed(1)} s`);
    const results = await measure(db);
    console.log('\n| query | median ms | worst of 20 ms |\n|---|---|---|');
    for (const r of results) console.log(`| ${r.label} | ${r.medianMs.toFixed(2)} | ${r.maxMs.toFixed(2)} |`);
    console.log(`\npeak RSS of the bench process: ${(process.resourceUsage().maxRSS / 1024).toFixed(0)} MB`);
  } finally {
    await db.destroy();
    if (KEEP) console.log(`kept database ${name}`);
    else await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await admin.end();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
