import { sql, type Kysely } from 'kysely';

/*
 * Invoices a partner planted at the simulated ministry with a sandbox key: the partner they belong
 * to, so no other partner's search lists them even though the ministry would return them to a
 * search by their payer; and, for a scenario whose payments are never approved, how long after
 * submission such a payment expires (instead of PAYMENT_EXPIRY_MS). A payment copies that bound
 * into its own `expiry_ms` when it is created, so the resolver reads it from the payment row.
 * Nullable with no default: adding the payments column rewrites no row.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE TABLE sandbox_invoices (
      invoice_id uuid PRIMARY KEY REFERENCES invoices (id) ON DELETE CASCADE,
      partner_id uuid NOT NULL REFERENCES partners (id) ON DELETE CASCADE,
      payment_expiry_ms integer CHECK (payment_expiry_ms > 0),
      created_at timestamptz NOT NULL DEFAULT now()
    )`.execute(db);
  await sql`CREATE INDEX sandbox_invoices_partner_idx ON sandbox_invoices (partner_id)`.execute(db);
  await sql`ALTER TABLE payments ADD COLUMN expiry_ms integer CHECK (expiry_ms > 0)`.execute(db);
}
