import { sql, type Kysely } from 'kysely';

/*
 * The operator's lists, newest first, read by an index instead of sorting every row the history
 * holds (each grew with the years: every discrepancy, case and audit entry is kept):
 * - discrepancies_created_idx: GET /admin/discrepancies without a filter;
 * - cases_status_resolved_idx: the resolved cases, by when they were resolved (the unresolved
 *   queue has cases_unresolved_due_idx);
 * - audit_log_target_idx: GET /admin/audit?targetId=, newest first as the list pages.
 * The three tables grow by operator actions and reconciliation findings, thousands a year, not by
 * payments: each build takes a moment.
 */
const INDEXES = [
  `CREATE INDEX discrepancies_created_idx ON discrepancies (created_at DESC, id DESC)`,
  `CREATE INDEX cases_status_resolved_idx ON cases (status, resolved_at DESC, id DESC)`,
  `CREATE INDEX audit_log_target_idx ON audit_log (target_id, id DESC)`,
];

export async function up(db: Kysely<unknown>): Promise<void> {
  for (const statement of INDEXES) await sql.raw(statement).execute(db);
}
