import { CompiledQuery, sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rm } from 'node:fs/promises';
import { createTestContext, type TestContext } from '../helpers/test-context.js';
import { testConfig } from '../helpers/test-config.js';
import { seededDataDir } from '../helpers/database-image.js';
import { createEventLogRepository, positionStatement } from '../../src/db/repositories/event-log.repository.js';

let ctx: TestContext;
let dataDir: string | undefined;
beforeAll(async () => {
  // On PGlite, a database of its own rather than the worker's reused one: the plan asserted below
  // depends on what the events table holds, and other files' events must not sway it.
  dataDir = testConfig().databaseUrl ? undefined : await seededDataDir('gpc-positioning-');
  ctx = await createTestContext(dataDir ? { config: { dataDir } } : {});
});
afterAll(async () => {
  await ctx.close();
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

interface PlanNode {
  'Node Type': string;
  Alias?: string;
  'Index Name'?: string;
  'Relation Name'?: string;
  'Join Filter'?: string;
  Plans?: PlanNode[];
}

function nodesOf(node: PlanNode): PlanNode[] {
  return [node, ...(node.Plans ?? []).flatMap(nodesOf)];
}

/** The plan PostgreSQL chooses for the positioning statement, as it would run it now. */
async function planOf(batchSize: number): Promise<PlanNode[]> {
  const q = positionStatement('0', batchSize).compile(ctx.deps.db);
  const { rows } = await ctx.deps.db.executeQuery<{ 'QUERY PLAN': [{ Plan: PlanNode }] | string }>(CompiledQuery.raw(`EXPLAIN (FORMAT JSON) ${q.sql}`, [...q.parameters]));
  const cell = rows[0]?.['QUERY PLAN'];
  const doc = typeof cell === 'string' ? (JSON.parse(cell) as [{ Plan: PlanNode }]) : cell;
  if (!doc) throw new Error('no plan');
  return nodesOf(doc[0].Plan);
}

async function appendUnpositioned(partnerId: string, n: number): Promise<void> {
  await sql`
    INSERT INTO events (partner_id, event, payload, created_at)
    SELECT ${partnerId}::uuid, 'payment.submitted', '{}'::jsonb, now() + i * interval '1 millisecond'
    FROM generate_series(1, ${n}::int) i`.execute(ctx.deps.db);
}

describe('positioning a burst of events the statistics have not seen', () => {
  it('finds each event of the batch by its key: no plan compares every pending event with every other', async () => {
    const partner = await ctx.partner();
    const log = createEventLogRepository(ctx.deps.db);
    // Statistics taken while every event had its position, as autovacuum takes them on a quiet day.
    await appendUnpositioned(partner.id, 20);
    await log.assignPending();
    await sql`ANALYZE events`.execute(ctx.deps.db);
    await appendUnpositioned(partner.id, 3000);

    const plan = await planOf(1000);
    const quadratic = plan.filter((n) => n['Node Type'] === 'Nested Loop' && n['Join Filter'] !== undefined);
    expect(quadratic, JSON.stringify(plan.map((n) => [n['Node Type'], n.Alias, n['Index Name'], n['Join Filter']]))).toEqual([]);
    // One lookup per monthly partition (e_1, e_2, ...): by its primary key in each that holds the events; the empty months ahead may be scanned.
    const { rows: holding } = await sql<{ name: string }>`SELECT DISTINCT tableoid::regclass::text AS name FROM events WHERE partner_id = ${partner.id}::uuid`.execute(ctx.deps.db);
    const target = plan.filter((n) => /^e(_\d+)?$/.test(n.Alias ?? '') && !['ModifyTable', 'Append'].includes(n['Node Type']));
    const ofHolding = target.filter((n) => holding.some((h) => h.name === n['Relation Name']));
    expect(ofHolding.length).toBe(holding.length);
    for (const n of ofHolding) expect(n['Index Name']).toBe(`${n['Relation Name']}_pkey`);

    await log.assignPending();
    const { rows } = await sql<{ unpositioned: number; positions: number }>`
      SELECT count(*) FILTER (WHERE sequence IS NULL)::int AS unpositioned, count(DISTINCT sequence)::int AS positions
      FROM events WHERE partner_id = ${partner.id}::uuid`.execute(ctx.deps.db);
    expect(rows[0]).toEqual({ unpositioned: 0, positions: 3020 });
  });
});
