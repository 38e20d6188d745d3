import { sql, type Kysely } from 'kysely';

/*
 * Indexes that let the /metrics gauges read one row per ministry system instead of every row that
 * could be the answer, so a scrape costs the same whatever the history holds:
 * - payments_unchecked_idx: the submitted payments of each system by the time their last status
 *   check ended (their submission before any), for `payment_status_unchecked_seconds`;
 * - reconciliation_sources_completed_idx: each system's completed reconciliations by completion
 *   time, for `reconciliation_last_success_timestamp_seconds` (one row a day and system, kept).
 * Both predicates are literals the gauges' queries repeat, so a prepared statement's generic plan
 * can use the indexes too.
 *
 * Building the payments index reads the whole table and holds off writes to it until the run
 * commits (about 0.1 s per 300,000 payments). On a large database build it beforehand with
 * `CREATE INDEX CONCURRENTLY` and the same definition (docs/deployment.md, "Migrations"): this
 * migration then finds it in the catalog and leaves payments alone. The catalog is read first
 * because `CREATE INDEX IF NOT EXISTS` takes the table's lock before it looks.
 */
const PAYMENTS_UNCHECKED = `CREATE INDEX payments_unchecked_idx ON payments (source, (coalesce(status_checked_at, submitted_at, created_at))) WHERE status = 'submitted'`;
const RECONCILIATIONS_COMPLETED = `CREATE INDEX reconciliation_sources_completed_idx ON reconciliation_sources (source, completed_at DESC) WHERE status = 'completed'`;

export async function up(db: Kysely<unknown>): Promise<void> {
  const { rows } = await sql<{ found: string | null }>`SELECT to_regclass('payments_unchecked_idx')::text AS found`.execute(db);
  if (!rows[0]?.found) await sql.raw(PAYMENTS_UNCHECKED).execute(db);
  await sql.raw(RECONCILIATIONS_COMPLETED).execute(db);
}
