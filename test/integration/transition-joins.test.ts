import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestContext, type TestContext } from '../helpers/test-context.js';

let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext();
});
afterAll(() => ctx.close());

describe('triggers that join a statement\'s old and new rows', () => {
  it('run without nested loops, so a statement of many rows costs in proportion to them', async () => {
    const { rows } = await sql<{ name: string; config: string[] | null }>`
      SELECT p.proname AS name, p.proconfig AS config FROM pg_proc p
      WHERE p.proname IN ('payment_history_update', 'counters_payments_updated') AND p.pronamespace = to_regnamespace(current_schema())
      ORDER BY p.proname`.execute(ctx.deps.db);
    expect(rows).toEqual([
      { name: 'counters_payments_updated', config: ['enable_nestloop=off'] },
      { name: 'payment_history_update', config: ['enable_nestloop=off'] },
    ]);
  });
});
