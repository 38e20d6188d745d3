import { sql, type Kysely } from 'kysely';

/*
 * What the retention sweep needs to stay cheap with millions of rows: range scans on created_at
 * (the existing indexes lead with partner or webhook), and indexes on the referencing columns, or
 * every deleted event or delivery costs PostgreSQL a full scan of the table that points at it to
 * check the foreign key (and the sweep's own NOT EXISTS probes would scan too).
 */
const statements = [
  `CREATE INDEX IF NOT EXISTS events_created_idx ON events (created_at)`,
  `CREATE INDEX IF NOT EXISTS webhook_deliveries_event_idx ON webhook_deliveries (event_id)`,
  `CREATE INDEX IF NOT EXISTS webhook_attempts_delivery_idx ON webhook_attempts (delivery_id)`,
  `CREATE INDEX IF NOT EXISTS webhook_attempts_created_idx ON webhook_attempts (created_at)`,
];

export async function up(db: Kysely<unknown>): Promise<void> {
  for (const statement of statements) await sql.raw(statement).execute(db);
}
