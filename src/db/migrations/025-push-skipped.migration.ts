import { sql, type Kysely } from 'kysely';

/*
 * A push queued while no FCM credentials are configured is recorded `skipped`: nothing was sent,
 * and `delivered` would have said otherwise. The list is written out, as in 018: a migration
 * must mean the same thing for ever.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE push_deliveries DROP CONSTRAINT push_deliveries_status_check`.execute(db);
  await sql`ALTER TABLE push_deliveries ADD CONSTRAINT push_deliveries_status_check CHECK (status IN ('pending', 'delivered', 'skipped', 'failed'))`.execute(db);
}
