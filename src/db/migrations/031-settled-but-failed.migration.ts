import { sql, type Kysely } from 'kysely';

/*
 * A payment failed here after its ministry still had no record of it at the end of the wait for
 * its submit, which the ministry then settled all the same (the submit arrived later still): a
 * finding of its own, with its own runbook line, apart from a settled payment unknown here.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE discrepancies DROP CONSTRAINT discrepancies_kind_check`.execute(db);
  await sql`ALTER TABLE discrepancies ADD CONSTRAINT discrepancies_kind_check
    CHECK (kind IN ('missing_at_ministry', 'missing_locally', 'amount_mismatch', 'settled_but_canceled', 'settled_but_failed'))`.execute(db);
}
