import { rm } from 'node:fs/promises';
import { isDeepStrictEqual } from 'node:util';
import { CompiledQuery, sql, type KyselyPlugin, type QueryId } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestContext, type TestContext } from '../helpers/test-context.js';
import { testConfig } from '../helpers/test-config.js';
import { seededDataDir } from '../helpers/database-image.js';
import { approve, cancelPayment, ownInvoice, payOk } from '../helpers/api.js';
import { parseExposition } from '../helpers/alert-rules.js';
import { createMetrics } from '../../src/adapters/metrics.js';
import { observeBacklogs } from '../../src/composition/metrics.factory.js';
import { createRepositories } from '../../src/composition/repositories.factory.js';
import type { Db } from '../../src/db/database.js';

/*
 * What GET /metrics reads from the database stays the same as history grows. Every query a scrape
 * runs is recorded, then run under EXPLAIN ANALYZE over a database holding a batch of settled
 * history (payments ended or waiting weeks for their next check, delivered webhooks, resolved
 * discrepancies and cases, completed reconciliation days, audit entries), and again once it holds
 * twice as much: each must read the same rows of every table both times, and none may read a table
 * that keeps history by a sequential scan. Both plans a prepared statement may run are checked:
 * the one planned with its parameters' values and the generic one, planned without them.
 */

/** Rows of each kind of history one batch adds. */
const BATCH = 3000;
/** The tables the batches fill: a scrape may reach into them only through an index, for rows that are not history. */
const HISTORY_TABLES = ['payments', 'invoices', 'payment_history', 'counters', 'events', 'webhook_deliveries', 'webhook_attempts', 'discrepancies', 'reconciliation_sources', 'cases', 'audit_log'];

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  'Actual Rows': number;
  'Actual Loops': number;
  'Rows Removed by Filter'?: number;
  'Rows Removed by Index Recheck'?: number;
  Plans?: PlanNode[];
}

const nodesOf = (node: PlanNode): PlanNode[] => [node, ...(node.Plans ?? []).flatMap(nodesOf)];

/**
 * What one plan of one scrape query read: rows per table or partition (those returned and those
 * filtered out), and the tables it read rows of by a sequential scan (a partition's as its
 * table's; an empty partition's scan reads nothing).
 */
interface Reads {
  rows: Record<string, number>;
  seqScans: string[];
  shape: string;
}

function readsOf(plan: PlanNode, parents: Map<string, string>): Reads {
  const rows: Record<string, number> = {};
  const seqScans: string[] = [];
  for (const n of nodesOf(plan)) {
    const table = n['Relation Name'];
    if (!table) continue;
    const read = (n['Actual Rows'] + (n['Rows Removed by Filter'] ?? 0) + (n['Rows Removed by Index Recheck'] ?? 0)) * n['Actual Loops'];
    rows[table] = (rows[table] ?? 0) + read;
    if (n['Node Type'].endsWith('Seq Scan') && read > 0) seqScans.push(parents.get(table) ?? table);
  }
  const shape = nodesOf(plan)
    .map((n) => [n['Node Type'], n['Relation Name'], n['Index Name']].filter(Boolean).join(' '))
    .join(' > ');
  return { rows, seqScans, shape };
}

/** A parameter written as a literal, for EXECUTE of the generic plan. */
function literal(value: unknown): string {
  if (value === null) return 'NULL';
  if (typeof value === 'number' || typeof value === 'bigint') return String(value);
  if (typeof value === 'boolean') return value ? 'true' : 'false';
  if (value instanceof Date) return `'${value.toISOString()}'`;
  if (typeof value === 'string') return `'${value.replaceAll("'", "''")}'`;
  throw new Error(`no literal for parameter ${JSON.stringify(value)}`);
}

/**
 * `db` with every query it runs recorded as sent. A query's subqueries are compiled on their own
 * too, but only a statement that is executed has a result: those are what the list keeps.
 */
function recorded(db: Db): { db: Db; queries: CompiledQuery[] } {
  const executor = db.getExecutor();
  const compiled = new Map<QueryId, CompiledQuery>();
  const queries: CompiledQuery[] = [];
  const plugin: KyselyPlugin = {
    transformQuery({ node, queryId }) {
      compiled.set(queryId, executor.compileQuery(node, queryId));
      return node;
    },
    transformResult({ result, queryId }) {
      const query = compiled.get(queryId);
      if (query) queries.push(query);
      return Promise.resolve(result);
    },
  };
  return { db: db.withPlugin(plugin), queries };
}

let ctx: TestContext;
let dataDir: string | undefined;
let prepared = 0;

/** The statements one scrape of /metrics runs, each once. */
async function scrapeQueries(): Promise<CompiledQuery[]> {
  const recording = recorded(ctx.deps.db);
  const metrics = createMetrics();
  observeBacklogs(metrics, createRepositories(ctx.config, recording.db, ctx.now), ctx.now);
  await metrics.registry.metrics();
  const seen = new Map(recording.queries.map((q) => [`${q.sql} ${JSON.stringify(q.parameters)}`, q]));
  return [...seen.values()];
}

function planOf(cell: unknown): PlanNode {
  const doc = (typeof cell === 'string' ? JSON.parse(cell) : cell) as [{ Plan: PlanNode }];
  return doc[0].Plan;
}

/** The query run with its parameters' values known when it is planned, as the first executions of a prepared statement are. */
async function customPlan(q: CompiledQuery): Promise<PlanNode> {
  const { rows } = await ctx.deps.db.executeQuery<{ 'QUERY PLAN': unknown }>(CompiledQuery.raw(`EXPLAIN (ANALYZE, FORMAT JSON) ${q.sql}`, [...q.parameters]));
  return planOf(rows[0]?.['QUERY PLAN']);
}

/** The query run by the plan PostgreSQL may keep for a prepared statement once it has run a few times: planned without its parameters. */
async function genericPlan(q: CompiledQuery): Promise<PlanNode> {
  const name = `scrape_query_${++prepared}`;
  return ctx.deps.db.transaction().execute(async (trx) => {
    await sql`SET LOCAL plan_cache_mode = force_generic_plan`.execute(trx);
    await trx.executeQuery(CompiledQuery.raw(`PREPARE ${name} AS ${q.sql}`));
    try {
      const args = q.parameters.length > 0 ? `(${q.parameters.map(literal).join(', ')})` : '';
      const { rows } = await trx.executeQuery<{ 'QUERY PLAN': unknown }>(CompiledQuery.raw(`EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE ${name}${args}`));
      return planOf(rows[0]?.['QUERY PLAN']);
    } finally {
      await trx.executeQuery(CompiledQuery.raw(`DEALLOCATE ${name}`));
    }
  });
}

/** Each scrape query's reads under both plans, keyed by the query's text. */
async function measure(): Promise<Map<string, { custom: Reads; generic: Reads }>> {
  const { rows } = await sql<{ child: string; parent: string }>`
    SELECT c.relname AS child, p.relname AS parent FROM pg_inherits i
    JOIN pg_class c ON c.oid = i.inhrelid JOIN pg_class p ON p.oid = i.inhparent
    WHERE c.relnamespace = current_schema()::regnamespace`.execute(ctx.deps.db);
  const parents = new Map(rows.map((r) => [r.child, r.parent]));
  const out = new Map<string, { custom: Reads; generic: Reads }>();
  for (const q of await scrapeQueries()) out.set(q.sql, { custom: readsOf(await customPlan(q), parents), generic: readsOf(await genericPlan(q), parents) });
  return out;
}

/** The rows a running service keeps whatever its age: unresolved payments, a due delivery, open discrepancies and cases, a disabled webhook. */
async function seedLive(partnerId: string, otherId: string): Promise<void> {
  const db = ctx.deps.db;
  await sql`
    INSERT INTO webhooks (id, partner_id, url, events, secret_ciphertext) VALUES
      (md5('hook-live')::uuid, ${partnerId}::uuid, 'https://example.test/hook', '["payment.confirmed"]', 'x')`.execute(db);
  await sql`
    INSERT INTO webhooks (id, partner_id, url, events, secret_ciphertext, disabled_at, disabled_reason) VALUES
      (md5('hook-off')::uuid, ${otherId}::uuid, 'https://example.test/off', '["payment.confirmed"]', 'x', now() - interval '1 day', 'failing')`.execute(db);
  await sql`
    INSERT INTO invoices (id, source, ref_num, description, amount, billed_amount, status, payee_id, payee_name)
    SELECT md5('inv-live-' || g)::uuid, (ARRAY['mof', 'etax', 'police'])[1 + g % 3], 'LIVE-' || g, 'Live', 1000, 1000, 'open', 'ORG-1', 'Org'
    FROM generate_series(1, 9) g`.execute(db);
  // Per system: a pending payment due for its first check, a submitted one due, one checked a minute ago and due later.
  await sql`
    INSERT INTO payments (id, partner_id, invoice_id, source, amount, status, submitted_at, status_checked_at, next_check_at, created_at, updated_at)
    SELECT md5('pay-live-' || g)::uuid, ${partnerId}::uuid, md5('inv-live-' || g)::uuid, (ARRAY['mof', 'etax', 'police'])[1 + g % 3], 1000,
           CASE WHEN g <= 3 THEN 'pending' ELSE 'submitted' END,
           CASE WHEN g > 3 THEN now() - g * interval '1 hour' END,
           CASE WHEN g > 6 THEN now() - interval '1 minute' END,
           CASE WHEN g <= 6 THEN now() - interval '1 minute' ELSE now() + interval '1 minute' END,
           now() - g * interval '1 hour', now()
    FROM generate_series(1, 9) g`.execute(db);
  await sql`
    INSERT INTO events (id, partner_id, event, payload) VALUES (md5('ev-live')::uuid, ${partnerId}::uuid, 'payment.confirmed', '{}')`.execute(db);
  await sql`
    INSERT INTO webhook_deliveries (webhook_id, event_id, status, attempts, next_attempt_at)
    VALUES (md5('hook-live')::uuid, md5('ev-live')::uuid, 'pending', 0, now() - interval '5 minutes')`.execute(db);
  await sql`
    INSERT INTO discrepancies (kind, finance_day, source, ref_num, payment_id, status, created_at) VALUES
      ('missing_locally', '2026-01-02', 'mof', 'LIVE-1', 'live-1', 'open', now()),
      ('amount_mismatch', '2026-01-02', 'etax', 'LIVE-2', 'live-2', 'open', now()),
      ('amount_mismatch', '2026-01-03', 'etax', 'LIVE-3', 'live-3', 'open', now())`.execute(db);
  await sql`
    INSERT INTO cases (partner_id, payment_id, type, status, description, created_at, updated_at, due_at) VALUES
      (${partnerId}::uuid, md5('pay-live-4')::uuid, 'paid_not_updated', 'open', 'Paid, still open', now() - interval '2 hours', now(), now() + interval '1 day'),
      (${partnerId}::uuid, md5('pay-live-5')::uuid, 'other', 'escalated', 'Paid twice?', now() - interval '3 days', now(), now() - interval '1 day')`.execute(db);
}

/**
 * One batch of history, `batch` years back: settled payments and a fifth still submitted but not
 * due for weeks, their invoices, events, deliveries and attempts, resolved discrepancies and cases,
 * completed reconciliation days and audit entries.
 */
async function seedHistory(partnerId: string, batch: number): Promise<void> {
  const db = ctx.deps.db;
  const at = (g: string) => sql.raw(`now() - (${batch * 366 + 2} + ${g} % 360) * interval '1 day' - ${g} * interval '1 second'`);
  const tag = `${batch}-`;
  await sql`
    INSERT INTO invoices (id, source, ref_num, description, amount, billed_amount, status, payee_id, payee_name, created_at, updated_at)
    SELECT md5('inv-' || ${tag} || g)::uuid, (ARRAY['mof', 'etax', 'police'])[1 + g % 3], 'HIST-' || ${tag} || g, 'History', 1000, 1000,
           CASE WHEN g % 5 = 4 THEN 'open' ELSE 'paid' END, 'ORG-1', 'Org', ${at('g')}, ${at('g')}
    FROM generate_series(1, ${BATCH}::int) g`.execute(db);
  await sql`
    INSERT INTO payments (id, partner_id, invoice_id, source, amount, status, failure_reason, submitted_at, paid_at, canceled_at, status_checked_at, next_check_at, created_at, updated_at)
    SELECT md5('pay-' || ${tag} || g)::uuid, ${partnerId}::uuid, md5('inv-' || ${tag} || g)::uuid, (ARRAY['mof', 'etax', 'police'])[1 + g % 3], 1000, s.status,
           CASE WHEN s.status = 'failed' THEN 'rejected by the ministry' END,
           s.at, CASE WHEN s.status = 'confirmed' THEN s.at END, CASE WHEN s.status = 'canceled' THEN s.at END,
           CASE WHEN s.status = 'submitted' AND g % 2 = 0 THEN now() - g * interval '1 second' END,
           CASE WHEN s.status = 'submitted' THEN now() + interval '30 days' + g * interval '1 second' END,
           s.at, s.at
    FROM generate_series(1, ${BATCH}::int) g,
         LATERAL (SELECT (ARRAY['confirmed', 'failed', 'canceled', 'confirmed', 'submitted'])[1 + g % 5] AS status, ${at('g')} AS at) s`.execute(db);
  // Written now: where these tables are split by month, the months before the first are not there.
  await sql`
    INSERT INTO events (id, partner_id, event, payload)
    SELECT md5('ev-' || ${tag} || g)::uuid, ${partnerId}::uuid, 'payment.confirmed', '{}'
    FROM generate_series(1, ${BATCH}::int) g`.execute(db);
  await sql`
    INSERT INTO webhook_deliveries (id, webhook_id, event_id, status, attempts, next_attempt_at, delivered_at)
    SELECT md5('del-' || ${tag} || g)::uuid, md5('hook-live')::uuid, md5('ev-' || ${tag} || g)::uuid, 'delivered', 1, now(), now()
    FROM generate_series(1, ${BATCH}::int) g`.execute(db);
  await sql`
    INSERT INTO webhook_attempts (delivery_id, webhook_id, attempt, succeeded, status_code, duration_ms)
    SELECT md5('del-' || ${tag} || g)::uuid, md5('hook-live')::uuid, 1, true, 200, 50
    FROM generate_series(1, ${BATCH}::int) g`.execute(db);
  await sql`
    INSERT INTO discrepancies (kind, finance_day, source, ref_num, payment_id, status, note, created_at, resolved_at, resolved_by)
    SELECT 'missing_at_ministry', to_char(${at('g')}, 'YYYY-MM-DD'), (ARRAY['mof', 'etax', 'police'])[1 + g % 3], 'HIST-' || ${tag} || g, ${tag} || g,
           'resolved', 'checked', ${at('g')}, ${at('g')}, 'ops'
    FROM generate_series(1, ${BATCH}::int) g`.execute(db);
  await sql`
    INSERT INTO reconciliation_sources (finance_day, source, status, attempts, next_attempt_at, completed_at, updated_at)
    SELECT to_char(now() - (${batch * 366 + 2} + d) * interval '1 day', 'YYYY-MM-DD'), s.source, 'completed', 1, now(), now() - (${batch * 366 + 2} + d) * interval '1 day', now()
    FROM generate_series(0, ${BATCH / 10 - 1}::int) d, (VALUES ('mof'), ('etax'), ('police')) AS s (source)`.execute(db);
  await sql`
    INSERT INTO cases (partner_id, payment_id, type, status, description, created_at, updated_at, due_at, outcome, resolved_at, resolved_by)
    SELECT ${partnerId}::uuid, md5('pay-' || ${tag} || g)::uuid, 'other', 'resolved', 'Settled', ${at('g')}, ${at('g')}, ${at('g')}, 'no_fault_found', ${at('g')}, 'operator'
    FROM generate_series(1, ${BATCH}::int) g WHERE g % 3 = 0`.execute(db);
  await sql`
    INSERT INTO audit_log (operator, action, target_type, target_id, created_at)
    SELECT 'ops', 'discrepancy.resolve', 'discrepancy', ${tag} || g, ${at('g')}
    FROM generate_series(1, ${BATCH}::int) g`.execute(db);
  // The roll-up keeps the counters' deltas to the few of its last interval.
  const counters = createRepositories(ctx.config, db, ctx.now).counters;
  while ((await counters.rollup(10_000)) > 0);
  await sql.raw(`VACUUM ANALYZE ${[...HISTORY_TABLES, 'counter_deltas', 'webhooks'].join(', ')}`).execute(db);
}

describe('what a scrape of /metrics reads', () => {
  let first: Awaited<ReturnType<typeof measure>>;
  let second: Awaited<ReturnType<typeof measure>>;

  beforeAll(async () => {
    // On PGlite a database of its own: the plans depend on what the tables hold, and other files' rows must not sway them.
    dataDir = testConfig().databaseUrl ? undefined : await seededDataDir('gpc-scrape-cost-');
    ctx = await createTestContext(dataDir ? { config: { dataDir } } : {});
    const partner = await ctx.partner();
    const other = await ctx.partner();
    await seedLive(partner.id, other.id);
    await seedHistory(partner.id, 0);
    first = await measure();
    await seedHistory(partner.id, 1);
    second = await measure();
  }, 120_000);

  afterAll(async () => {
    await ctx?.close();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  it('runs the same statements whatever the history', () => {
    expect([...second.keys()].sort()).toEqual([...first.keys()].sort());
    // Every database gauge: payments, backlog, unchecked age, discrepancies, reconciliations, webhooks, deliveries, cases.
    expect(first.size).toBeGreaterThanOrEqual(9);
  });

  it('reads the same rows of every table with twice the history, in both plans', () => {
    const grown = [...second].flatMap(([text, reads]) =>
      (['custom', 'generic'] as const).flatMap((plan) => {
        const before = first.get(text)?.[plan].rows;
        const after = reads[plan].rows;
        return isDeepStrictEqual(before, after) ? [] : [`${plan} plan of ${text}\n  ${reads[plan].shape}\n  read ${JSON.stringify(before)}, then ${JSON.stringify(after)}`];
      }),
    );
    expect(grown).toEqual([]);
  });

  it('reads no table that keeps history by a sequential scan, in either plan', () => {
    const scans = [...second].flatMap(([text, reads]) =>
      (['custom', 'generic'] as const).flatMap((plan) => {
        const tables = reads[plan].seqScans.filter((t) => HISTORY_TABLES.includes(t));
        return tables.length === 0 ? [] : [`${plan} plan of ${text}\n  ${reads[plan].shape}`];
      }),
    );
    expect(scans).toEqual([]);
  });

  it('gives what counting the rows gives', async () => {
    const db = ctx.deps.db;
    const repos = createRepositories(ctx.config, db, ctx.now);
    const count = async (query: ReturnType<typeof sql<{ k: string; n: string }>>) =>
      Object.fromEntries((await query.execute(db)).rows.map((r) => [r.k, Number(r.n)]));

    expect(await repos.reports.paymentsByStatus()).toEqual(await count(sql`SELECT status AS k, count(*) AS n FROM payments GROUP BY status`));
    expect(await repos.reports.unresolvedBySource()).toEqual(
      await count(sql`SELECT source AS k, count(*) AS n FROM payments WHERE status IN ('pending', 'submitted') AND next_check_at <= now() GROUP BY source`),
    );
    expect(await repos.reconciliations.openByKind()).toEqual(await count(sql`SELECT kind AS k, count(*) AS n FROM discrepancies WHERE status = 'open' GROUP BY kind`));

    const since = (await sql<{ source: string; since: Date }>`
      SELECT source, min(coalesce(status_checked_at, submitted_at, created_at)) AS since FROM payments WHERE status = 'submitted' GROUP BY source`.execute(db)).rows;
    expect(await repos.reports.oldestUncheckedBySource()).toEqual(Object.fromEntries(since.map((r) => [r.source, new Date(r.since)])));

    const completed = (await sql<{ source: string; at: Date }>`
      SELECT source, max(completed_at) AS at FROM reconciliation_sources WHERE status = 'completed' GROUP BY source`.execute(db)).rows;
    const last = await repos.reconciliations.lastCompleted();
    expect(Object.fromEntries(last.map((r) => [r.source, r.at]))).toEqual(Object.fromEntries(completed.map((r) => [r.source, new Date(r.at)])));
  });
});

describe('payments_by_status through payments changing status', () => {
  let flow: TestContext;
  beforeAll(async () => {
    flow = await createTestContext();
  });
  afterAll(async () => {
    await flow?.close();
  });

  const scraped = async (): Promise<Record<string, number>> => {
    const res = await flow.admin.inject({ method: 'GET', url: '/metrics' });
    expect(res.statusCode).toBe(200);
    return Object.fromEntries(
      parseExposition(res.body)
        .samples.filter((s) => s.name === 'payments_by_status')
        .map((s) => [/status="([^"]+)"/.exec(s.series)?.[1] ?? '', s.value]),
    );
  };
  const counted = async (): Promise<Record<string, number>> =>
    Object.fromEntries(
      (await sql<{ status: string; n: string }>`SELECT status, count(*) AS n FROM payments GROUP BY status`.execute(flow.deps.db)).rows.map((r) => [r.status, Number(r.n)]),
    );
  const job = (name: string) => {
    const found = flow.deps.jobs.find((j) => j.name === name);
    if (!found) throw new Error(`no job ${name}`);
    return found;
  };
  const rollUp = async () => {
    await job('counter-rollup').run();
  };

  it('counts each payment under its status at every step, before and after the roll-up folds the changes, and drops a status none holds', async () => {
    const partner = await flow.partner();
    const invoices = [await ownInvoice(flow, partner, 'mof'), await ownInvoice(flow, partner, 'etax'), await ownInvoice(flow, partner, 'police')];
    const payments = [];
    for (const invoice of invoices) payments.push(await payOk(flow, partner.apiKey, { invoiceId: invoice.id }));
    expect(await scraped()).toEqual({ submitted: 3 });
    await rollUp();
    expect(await scraped()).toEqual({ submitted: 3 });

    // One confirmed by the confirmation job, one canceled by the partner; the deltas not yet folded.
    expect((await approve(flow, invoices[0]!.refNum)).statusCode).toBe(200);
    flow.advance(flow.config.confirmPollMs + 1000);
    const confirmation = job('payment-confirmation');
    await confirmation.run();
    await confirmation.drain?.();
    expect((await cancelPayment(flow, partner.apiKey, payments[1]!.id)).statusCode).toBeLessThan(300);
    const afterChanges = await counted();
    expect(afterChanges.confirmed).toBe(1);
    expect(await scraped()).toEqual(afterChanges);
    await rollUp();
    expect(await scraped()).toEqual(afterChanges);

    // The last submitted one confirmed too: `submitted` has no series, folded or not.
    expect((await approve(flow, invoices[2]!.refNum)).statusCode).toBe(200);
    flow.advance(flow.config.confirmPollMs + 1000);
    await confirmation.run();
    await confirmation.drain?.();
    const settled = await counted();
    expect(settled.submitted).toBeUndefined();
    expect(await scraped()).toEqual(settled);
    await rollUp();
    expect(await scraped()).toEqual(settled);
  });
});
