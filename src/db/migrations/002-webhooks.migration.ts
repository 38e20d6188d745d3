import { sql, type Kysely } from 'kysely';

// One statement per entry: PGlite's extended protocol runs a single statement per query.
const statements = splitStatements(`
    CREATE TABLE webhooks (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      partner_id uuid NOT NULL REFERENCES partners(id),
      url text NOT NULL,
      events jsonb NOT NULL,
      secret_ciphertext text NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      deleted_at timestamptz
    );
    CREATE INDEX webhooks_partner_idx ON webhooks (partner_id, created_at) WHERE deleted_at IS NULL;
    CREATE TABLE webhook_deliveries (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      webhook_id uuid NOT NULL REFERENCES webhooks(id),
      event_id uuid NOT NULL REFERENCES events(id),
      status text NOT NULL CHECK (status IN ('pending', 'delivered', 'failed', 'canceled')),
      attempts integer NOT NULL DEFAULT 0,
      next_attempt_at timestamptz NOT NULL,
      delivered_at timestamptz,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(),
      UNIQUE (webhook_id, event_id)
    );
    CREATE INDEX webhook_deliveries_due_idx ON webhook_deliveries (next_attempt_at) WHERE status = 'pending';
    CREATE TABLE webhook_attempts (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      delivery_id uuid NOT NULL REFERENCES webhook_deliveries(id),
      webhook_id uuid NOT NULL REFERENCES webhooks(id),
      attempt integer NOT NULL,
      succeeded boolean NOT NULL,
      status_code integer,
      duration_ms integer NOT NULL,
      error text,
      next_retry_at timestamptz,
      created_at timestamptz NOT NULL DEFAULT now()
    );
    CREATE INDEX webhook_attempts_webhook_idx ON webhook_attempts (webhook_id, created_at DESC);
    CREATE TABLE devices (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      partner_id uuid NOT NULL REFERENCES partners(id),
      user_id text NOT NULL,
      fcm_token text NOT NULL,
      platform text NOT NULL CHECK (platform IN ('ios', 'android')),
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(),
      UNIQUE (partner_id, user_id, fcm_token)
    );
`);

function splitStatements(script: string): string[] {
  return script.split(/;\s*\n/).map((s) => s.trim().replace(/;$/, '')).filter((s) => s.length > 0);
}

export async function up(db: Kysely<unknown>): Promise<void> {
  for (const statement of statements) await sql.raw(statement).execute(db);
}
