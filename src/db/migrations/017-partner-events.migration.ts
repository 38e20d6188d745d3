import { sql, type Kysely } from 'kysely';

/*
 * What a partner needs to catch up on its own: events found by payment (the events API and the
 * delivery log filter by it; a column, filled from the payload for the events already written),
 * and webhooks that can be disabled (by the partner, or by the service when every attempt has
 * failed for long enough) and whose secret can be rotated with the previous one still signing for
 * a grace period. `enabled_at` is when a disabled webhook was enabled again: failures before it
 * no longer count toward disabling it.
 */
const statements = [
  `ALTER TABLE events ADD COLUMN payment_id uuid`,
  `UPDATE events SET payment_id = (payload->>'id')::uuid
    WHERE event IN ('payment.submitted', 'payment.confirmed')
      AND payload->>'id' ~* '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$'`,
  `CREATE INDEX events_partner_payment_idx ON events (partner_id, payment_id, created_at) WHERE payment_id IS NOT NULL`,
  `ALTER TABLE webhooks ADD COLUMN disabled_at timestamptz`,
  `ALTER TABLE webhooks ADD COLUMN disabled_reason text CHECK (disabled_reason IN ('manual', 'failing'))`,
  `ALTER TABLE webhooks ADD CONSTRAINT webhooks_disabled_state_check CHECK ((disabled_at IS NULL) = (disabled_reason IS NULL))`,
  `ALTER TABLE webhooks ADD COLUMN enabled_at timestamptz`,
  `ALTER TABLE webhooks ADD COLUMN previous_secret_ciphertext text`,
  `ALTER TABLE webhooks ADD COLUMN previous_secret_expires_at timestamptz`,
];

export async function up(db: Kysely<unknown>): Promise<void> {
  for (const statement of statements) await sql.raw(statement).execute(db);
}
