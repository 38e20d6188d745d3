import { sql, type Kysely } from 'kysely';

/*
 * Each claim of an idempotency key gets its own token. Completing or releasing the key presents
 * it, so a request that stalled past its lease and woke up after another took the key over
 * changes nothing of the newer request's. Rows written before carry none: a claim gives them one.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE idempotency_keys ADD COLUMN lease_token uuid`.execute(db);
}
