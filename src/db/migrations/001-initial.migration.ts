import { sql, type Kysely } from 'kysely';

// One statement per entry: PGlite's extended protocol runs a single statement per query.
const statements = splitStatements(`
    CREATE TABLE partners (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      name text NOT NULL,
      qr_standard text NOT NULL CHECK (qr_standard IN ('qrpay', 'govstd')),
      environment text NOT NULL CHECK (environment IN ('sandbox', 'production')),
      active boolean NOT NULL DEFAULT true,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now()
    );
    CREATE TABLE api_keys (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      partner_id uuid NOT NULL REFERENCES partners(id),
      key_hash text NOT NULL UNIQUE,
      key_prefix text NOT NULL,
      environment text NOT NULL,
      expires_at timestamptz,
      created_at timestamptz NOT NULL DEFAULT now()
    );
    CREATE INDEX api_keys_partner_idx ON api_keys (partner_id);
    CREATE TABLE invoices (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      source text NOT NULL,
      ref_num text NOT NULL,
      description text NOT NULL,
      amount numeric(16, 2) NOT NULL CHECK (amount >= 0),
      status text NOT NULL CHECK (status IN ('open', 'paid', 'canceled')),
      due_date timestamptz,
      issued_at timestamptz,
      vehicle_no text,
      tax_ref text,
      payer_register text,
      payer_name text,
      payee_id text NOT NULL,
      payee_name text NOT NULL,
      year jsonb,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(),
      UNIQUE (source, ref_num)
    );
    CREATE INDEX invoices_payer_idx ON invoices (payer_register);
    CREATE INDEX invoices_vehicle_idx ON invoices (vehicle_no);
    CREATE INDEX invoices_tax_ref_idx ON invoices (tax_ref);
    CREATE TABLE partner_invoices (
      partner_id uuid NOT NULL REFERENCES partners(id),
      invoice_id uuid NOT NULL REFERENCES invoices(id),
      first_seen_at timestamptz NOT NULL DEFAULT now(),
      last_seen_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (partner_id, invoice_id)
    );
    CREATE TABLE payments (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      partner_id uuid NOT NULL REFERENCES partners(id),
      invoice_id uuid NOT NULL REFERENCES invoices(id),
      amount numeric(16, 2) NOT NULL CHECK (amount > 0),
      status text NOT NULL CHECK (status IN ('pending', 'submitted', 'confirmed', 'failed', 'canceled')),
      failure_reason text,
      paid_at timestamptz,
      canceled_at timestamptz,
      next_check_at timestamptz,
      check_attempts integer NOT NULL DEFAULT 0,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now()
    );
    CREATE INDEX payments_partner_created_idx ON payments (partner_id, created_at DESC, id DESC);
    CREATE INDEX payments_check_idx ON payments (next_check_at) WHERE status IN ('pending', 'submitted');
    CREATE TABLE payment_invoices (
      payment_id uuid NOT NULL REFERENCES payments(id),
      invoice_id uuid NOT NULL REFERENCES invoices(id),
      position integer NOT NULL,
      active boolean NOT NULL,
      PRIMARY KEY (payment_id, invoice_id)
    );
    CREATE UNIQUE INDEX payment_invoices_one_active_idx ON payment_invoices (invoice_id) WHERE active;
    CREATE TABLE idempotency_keys (
      partner_id uuid NOT NULL REFERENCES partners(id),
      key text NOT NULL,
      request_hash text NOT NULL,
      state text NOT NULL CHECK (state IN ('in_progress', 'completed')),
      locked_until timestamptz NOT NULL,
      payment_id uuid REFERENCES payments(id),
      response_status integer,
      response_body jsonb,
      created_at timestamptz NOT NULL DEFAULT now(),
      expires_at timestamptz NOT NULL,
      PRIMARY KEY (partner_id, key)
    );
    CREATE INDEX idempotency_keys_expires_idx ON idempotency_keys (expires_at);
    CREATE TABLE events (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      partner_id uuid NOT NULL REFERENCES partners(id),
      event text NOT NULL,
      payload jsonb NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now()
    );
    CREATE INDEX events_partner_idx ON events (partner_id, created_at);
`);

function splitStatements(script: string): string[] {
  return script.split(/;\s*\n/).map((s) => s.trim().replace(/;$/, '')).filter((s) => s.length > 0);
}

export async function up(db: Kysely<unknown>): Promise<void> {
  for (const statement of statements) await sql.raw(statement).execute(db);
}
