import { sql, type Kysely } from 'kysely';

/**
 * The delivery claim looks up each endpoint's oldest due rows on their own, so that one
 * endpoint's backlog never fills a pass; this index serves that per-endpoint lookup.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE INDEX IF NOT EXISTS webhook_deliveries_endpoint_due_idx
    ON webhook_deliveries (webhook_id, next_attempt_at) WHERE status = 'pending'
  `.execute(db);
}
