import { sql, type Kysely } from 'kysely';

/*
 * Each attempt carries its delivery's created_at, the deliveries' partition key, so a webhook's
 * attempt log finds each attempt's delivery in its own month instead of probing every month's
 * primary key. Attempts logged before this migration have none (NULL) and are looked up by id
 * alone until their retention takes them. Adding a nullable column without a default changes the
 * catalog only.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE webhook_attempts ADD COLUMN IF NOT EXISTS delivery_created_at timestamptz`.execute(db);
}
