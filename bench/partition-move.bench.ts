/**
 * `npm run bench:partition-move`: the move of an existing database to monthly partitions, on a
 * year of data at 1M invoices (the scale bench's seed, on the layout before partitions), while a
 * writer appends events with their deliveries (the outbox's own statement) and a reader lists a
 * partner's events, each once every 10 ms. Prints and writes bench/results/partition-move.md: the
 * rows moved, how long the move took and how long its one exclusive swap held its locks, how often
 * a step gave up its lock wait (lock_timeout 1 s) and tried again, and the writer's and reader's
 * slowest answers during the move (the lock a caller waited on, at most). Needs PostgreSQL
 * (`--pg=URL`, default the local one); a scratch database is created and dropped. `--invoices=N`
 * (1,000,000 by default) sets the volume; the result goes to bench/results/partition-move-<N>.md
 * (`1M`, `5M`).
 */
import { randomUUID } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { sql } from 'kysely';
import { createDatabase, migrateToLatest, type Db } from '../src/db/database.js';
import { movePartitionedTables, type PartitionMove } from '../src/db/partition-move.js';
import { createOutbox } from '../src/db/outbox.statements.js';
import { unitOfWorkRunner } from '../src/db/unit-of-work.js';
import { PARTITIONED_TABLES } from '../src/db/repositories/partition.repository.js';
import { benchFlag, freshDatabase, percentile } from './bench-processes.js';
import { seedStatements } from './scale-seed.js';

const PG_URL = benchFlag('pg') ?? 'postgres://postgres@127.0.0.1:5432/test';
const INVOICES = Number(benchFlag('invoices') ?? 1_000_000);
const PAYMENTS = Math.round(INVOICES * 0.3);
const PROBE_EVERY_MS = 10;
const BEFORE_PARTITIONS = '033-cases';

interface Probe {
  label: string;
  ms: number[];
  errors: string[];
}

/** Runs `call` every PROBE_EVERY_MS until stopped, timing each answer. */
function probe(label: string, call: () => Promise<unknown>) {
  const p: Probe = { label, ms: [], errors: [] };
  let running = true;
  const done = (async () => {
    while (running) {
      const start = performance.now();
      try {
        await call();
      } catch (err) {
        p.errors.push((err as Error).message);
      }
      p.ms.push(performance.now() - start);
      await new Promise((r) => setTimeout(r, PROBE_EVERY_MS));
    }
  })();
  return {
    async stop(): Promise<Probe> {
      running = false;
      await done;
      return p;
    },
  };
}

async function counts(db: Db): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const table of PARTITIONED_TABLES) {
    const { rows } = await sql<{ n: string }>`SELECT count(*) AS n FROM ${sql.table(table)}`.execute(db);
    out[table] = Number(rows[0]?.n ?? 0);
  }
  return out;
}

async function main(): Promise<void> {
  const scratch = await freshDatabase(PG_URL, 'bench_partition_move');
  if (!scratch) process.exit(1);
  const migrator = await createDatabase({ databaseUrl: scratch.url, dataDir: 'memory://', poolSize: 1 });
  const service = await createDatabase({ databaseUrl: scratch.url, dataDir: 'memory://', poolSize: 4 });
  try {
    await migrateToLatest(migrator, undefined, BEFORE_PARTITIONS);
    const { rows } = await sql<{ id: string }>`
      INSERT INTO partners (name, qr_standard, environment) SELECT 'Bank ' || g, 'qrpay', 'production' FROM generate_series(1, 41) g RETURNING id`.execute(migrator);
    const [partnerId, ...otherPartnerIds] = rows.map((r) => r.id) as [string, ...string[]];
    const { rows: hooks } = await sql<{ id: string }>`
      INSERT INTO webhooks (partner_id, url, events, secret_ciphertext) VALUES (${partnerId}::uuid, 'https://example.test/hook', '["payment.confirmed","payment.submitted"]', 'x') RETURNING id`.execute(migrator);
    const webhookId = hooks[0]?.id as string;
    const seeded = performance.now();
    console.log(`seeding ${INVOICES.toLocaleString('en')} invoices, ${PAYMENTS.toLocaleString('en')} payments (the layout before partitions)`);
    for (const statement of seedStatements({ invoices: INVOICES, payments: PAYMENTS, partnerId, webhookId, otherPartnerIds, pastMonths: 0 })) await sql.raw(statement).execute(migrator);
    const seedS = (performance.now() - seeded) / 1000;
    const before = await counts(migrator);
    console.log(`seeded in ${seedS.toFixed(0)} s:`, before);

    const outbox = createOutbox({ now: () => new Date() });
    const uow = unitOfWorkRunner(service);
    const writer = probe('writer: an event with its delivery (the outbox statement)', () =>
      uow((u) => outbox.append(u, partnerId, { event: 'payment.confirmed', data: { id: randomUUID(), amount: 100, partnerReference: null } })),
    );
    const reader = probe("reader: a partner's latest 20 events", () => sql`SELECT id FROM events WHERE partner_id = ${partnerId}::uuid ORDER BY created_at DESC LIMIT 20`.execute(service));
    await new Promise((r) => setTimeout(r, 1000));
    const started = performance.now();
    let move: PartitionMove;
    try {
      move = await movePartitionedTables(migrator);
    } finally {
      await new Promise((r) => setTimeout(r, 1000));
    }
    const moveS = (performance.now() - started) / 1000;
    const probes = [await writer.stop(), await reader.stop()];
    const after = await counts(migrator);

    const round = (v: number) => Math.round(v * 10) / 10;
    const lines = [
      `# The move to monthly partitions at ${INVOICES.toLocaleString('en')} invoices`,
      '',
      `\`npm run bench:partition-move\` (${new Date().toISOString().slice(0, 10)}; PostgreSQL ${(await sql<{ v: string }>`SELECT current_setting('server_version') AS v`.execute(migrator)).rows[0]?.v}; seeded in ${seedS.toFixed(0)} s).`,
      '',
      '| table | rows before | rows after (with the writer\'s) |',
      '|---|---|---|',
      ...PARTITIONED_TABLES.map((t) => `| ${t} | ${(before[t] ?? 0).toLocaleString('en')} | ${(after[t] ?? 0).toLocaleString('en')} |`),
      '',
      '| the move | |',
      '|---|---|',
      `| whole move (keys built concurrently, rows checked, one swap) | ${moveS.toFixed(1)} s |`,
      `| the swap: exclusive locks held | ${move.swapMs} ms |`,
      `| swap attempts / lock waits given up (1 s each) | ${move.swapAttempts} / ${move.lockWaits} |`,
      `| cutover (the legacy partitions end here) | ${move.cutover?.toISOString() ?? 'none'} |`,
      '',
      `| probe, every ${PROBE_EVERY_MS} ms during the move | answers | errors | p50 ms | p99 ms | slowest ms |`,
      '|---|---|---|---|---|---|',
      ...probes.map((p) => {
        const sorted = [...p.ms].sort((a, b) => a - b);
        return `| ${p.label} | ${p.ms.length} | ${p.errors.length} | ${round(percentile(sorted, 0.5))} | ${round(percentile(sorted, 0.99))} | ${round(sorted.at(-1) ?? 0)} |`;
      }),
    ];
    const text = lines.join('\n');
    console.log(text);
    for (const p of probes) if (p.errors.length > 0) console.log(`${p.label}: first error: ${p.errors[0]}`);
    mkdirSync('bench/results', { recursive: true });
    const volume = INVOICES % 1_000_000 === 0 ? `${INVOICES / 1_000_000}M` : String(INVOICES);
    writeFileSync(`bench/results/partition-move-${volume}.md`, `${text}\n`);
    if (probes.some((p) => p.errors.length > 0)) process.exitCode = 1;
  } finally {
    await service.destroy();
    await migrator.destroy();
    await scratch.drop();
  }
}

await main();
