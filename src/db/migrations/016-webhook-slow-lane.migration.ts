import { sql, type Kysely } from 'kysely';

/*
 * When a webhook's latest attempt failed or timed out (null while its latest attempt succeeded,
 * and before its first): its deliveries are sent in the slow lane, one at a time, so a receiver
 * that hangs holds no slot of the healthy ones. On the row, so every instance and a restart see it.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE webhooks ADD COLUMN slow_since timestamptz`.execute(db);
}
