import { sql } from 'kysely';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createTestContext, type TestContext } from '../helpers/test-context.js';
import { overdueSql } from '../../src/db/invoice-status.sql.js';
import { isOverdue, type StoredInvoiceStatus } from '../../src/domain/invoice-status.js';

let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext();
});
afterAll(() => ctx.close());

it('agrees in SQL with the domain overdue rule', async () => {
  const now = new Date('2026-06-01T00:00:00.000Z');
  const cases: [StoredInvoiceStatus, string | null][] = [
    ['open', '2026-05-31T23:59:59.999Z'],
    ['open', '2026-06-01T00:00:00.000Z'],
    ['open', '2026-06-02T00:00:00.000Z'],
    ['open', null],
    ['paid', '2020-01-01T00:00:00.000Z'],
    ['canceled', '2020-01-01T00:00:00.000Z'],
  ];
  for (const [status, due] of cases) {
    const { rows } = await sql<{ overdue: boolean }>`
      SELECT ${overdueSql('i', now)} AS overdue
      FROM (SELECT ${status}::text AS status, ${due}::timestamptz AS due_date) AS i`.execute(ctx.deps.db);
    expect(rows[0]?.overdue, `${status} due ${due}`).toBe(isOverdue(status, due ? new Date(due) : null, now));
  }
});
