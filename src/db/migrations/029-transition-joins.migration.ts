import { sql, type Kysely } from 'kysely';

/*
 * The payments triggers join a statement's old and new rows by id. Transition tables have no
 * statistics, and PL/pgSQL keeps the plan it made for the first, one-row statement: a nested loop
 * that compares every old row with every new one. A claim of 380 due checks updates 380 payments
 * in one statement, and each of the two triggers then made 144,400 comparisons (50-60 ms each).
 * Without nested loops the joins hash, in time proportional to the rows. Neither function reads
 * any other table, so no index path is given up.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER FUNCTION payment_history_update() SET enable_nestloop = off`.execute(db);
  await sql`ALTER FUNCTION counters_payments_updated() SET enable_nestloop = off`.execute(db);
}
