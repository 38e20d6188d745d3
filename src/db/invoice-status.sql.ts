import { sql, type RawBuilder } from 'kysely';

/**
 * The overdue rule of `isOverdue` (src/domain/invoice-status.ts) for SQL over an invoices alias:
 * stored `open` with a due date strictly before `now`. test/integration/overdue-rule.test.ts holds the two together.
 */
export function overdueSql(alias: string, now: Date): RawBuilder<boolean> {
  const col = (name: string) => sql.ref(`${alias}.${name}`);
  return sql<boolean>`(${col('status')} = 'open' AND ${col('due_date')} IS NOT NULL AND ${col('due_date')} < ${now})`;
}
