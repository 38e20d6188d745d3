import { sql, type Kysely } from 'kysely';

/*
 * Indexes the bench:scale plans showed missing, so each retention pass costs its batch, not the
 * history: the sweep's "no unfinished delivery" probe reads only unfinished deliveries (without
 * it, PostgreSQL hashed every delivery of the table on each pass: 40 ms at 600k deliveries). The
 * predicate spells the terminal statuses as the sweep's query does, so the planner can use it.
 */
const statements = [
  `CREATE INDEX IF NOT EXISTS webhook_deliveries_unfinished_event_idx ON webhook_deliveries (event_id)
    WHERE status NOT IN ('delivered', 'failed', 'canceled')`,
];

export async function up(db: Kysely<unknown>): Promise<void> {
  for (const statement of statements) await sql.raw(statement).execute(db);
}
