import { sql, type Kysely } from 'kysely';

/*
 * Each hold of a day and ministry system gets its own token. Renewing, releasing and recording
 * findings present it, so an instance that stalled past its lease and woke up after another took
 * the day changes nothing of the newer run's.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE reconciliation_sources ADD COLUMN lease_token uuid`.execute(db);
}
