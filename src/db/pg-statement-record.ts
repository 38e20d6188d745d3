import type pg from 'pg';

/**
 * pg's own record of the named statements a connection has prepared. pg has no public API to
 * forget one, and it sends Parse again only for a name missing from this record, so a statement
 * PostgreSQL refused as stale must be dropped here after DEALLOCATE. These are pg internals
 * (lib/connection.js): test/unit/pg-statement-record.test.ts fails if an upgrade moves them.
 */
interface StatementRecord {
  parsedStatements: Record<string, string>;
  submittedNamedStatements?: Record<string, string>;
}

export function statementRecordOf(client: pg.ClientBase): StatementRecord | null {
  const connection = (client as unknown as { connection?: Partial<StatementRecord> }).connection;
  const parsed = connection?.parsedStatements;
  return parsed && typeof parsed === 'object' ? (connection as StatementRecord) : null;
}

/** Makes pg prepare `name` again on its next use; throws when pg no longer keeps the record. */
export function forgetPreparedStatement(client: pg.ClientBase, name: string): void {
  const record = statementRecordOf(client);
  if (!record) throw new Error('pg no longer exposes connection.parsedStatements; prepared-statement recovery needs updating');
  delete record.parsedStatements[name];
  if (record.submittedNamedStatements) delete record.submittedNamedStatements[name];
}
