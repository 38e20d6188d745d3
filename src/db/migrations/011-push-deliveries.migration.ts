import { sql, type Kysely } from 'kysely';

/*
 * Pushes to the partner's end users. A payment may name its end user (the partner's user id, as in
 * POST /devices); when it is confirmed, the outbox write that records `payment.confirmed` also
 * queues one push delivery per device of that user and partner, in the same statement, so a
 * confirmation never loses its pushes and a push never blocks a confirmation.
 */
const statements = [
  `ALTER TABLE payments ADD COLUMN user_id text`,
  `CREATE TABLE push_deliveries (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    event_id uuid NOT NULL REFERENCES events(id) ON DELETE CASCADE,
    partner_id uuid NOT NULL,
    device_id uuid NOT NULL REFERENCES devices(id) ON DELETE CASCADE,
    status text NOT NULL DEFAULT 'pending',
    attempts integer NOT NULL DEFAULT 0,
    next_attempt_at timestamptz NOT NULL,
    last_error text,
    delivered_at timestamptz,
    created_at timestamptz NOT NULL DEFAULT now(),
    UNIQUE (event_id, device_id)
  )`,
  `CREATE INDEX push_deliveries_due_idx ON push_deliveries (next_attempt_at) WHERE status = 'pending'`,
  `CREATE INDEX push_deliveries_device_idx ON push_deliveries (device_id)`,
];

export async function up(db: Kysely<unknown>): Promise<void> {
  for (const statement of statements) await sql.raw(statement).execute(db);
}
