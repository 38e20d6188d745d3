import { sql } from 'kysely';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createTestContext, type TestContext } from '../helpers/test-context.js';
import { createReportRepository } from '../../src/db/repositories/report.repository.js';
import { isOverdue } from '../../src/domain/invoice-status.js';
import type { StoredInvoiceStatus } from '../../src/domain/vocabulary.js';

let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext();
});
afterAll(() => ctx.close());

/*
 * The summary counts overdue invoices from the counters' due-date buckets (migration 007); this
 * holds that SQL to the domain rule `isOverdue`, at the edges of the rule.
 */
it('counts overdue in the summary exactly as the domain overdue rule says', async () => {
  const now = new Date('2026-06-01T00:00:00.000Z');
  const cases: [StoredInvoiceStatus, string | null][] = [
    ['open', '2026-05-31T23:59:59.999Z'],
    ['open', '2026-06-01T00:00:00.000Z'],
    ['open', '2026-06-02T00:00:00.000Z'],
    ['open', null],
    ['paid', '2020-01-01T00:00:00.000Z'],
    ['canceled', '2020-01-01T00:00:00.000Z'],
  ];
  const reports = createReportRepository(ctx.deps.db);
  for (const [status, due] of cases) {
    const partner = await ctx.partner();
    await sql`
      WITH i AS (
        INSERT INTO invoices (source, ref_num, description, amount, billed_amount, status, due_date, payee_id, payee_name)
        VALUES ('mof', ${`OVERDUE-${partner.id}`}, 'rule', 100, 100, ${status}, ${due}::timestamptz, 'ORG', 'Org')
        RETURNING id
      )
      INSERT INTO partner_invoices (partner_id, invoice_id) SELECT ${partner.id}::uuid, id FROM i`.execute(ctx.deps.db);
    const summary = await reports.summary(partner.id, now);
    const overdue = isOverdue(status, due ? new Date(due) : null, now);
    expect(summary, `${status} due ${due}`).toMatchObject({
      total: 1,
      overdue: overdue ? 1 : 0,
      open: status === 'open' && !overdue ? 1 : 0,
      paid: status === 'paid' ? 1 : 0,
    });
  }
});
