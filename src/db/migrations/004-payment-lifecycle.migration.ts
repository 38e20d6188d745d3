import { sql, type Kysely } from 'kysely';

/*
 * The payment's ministry system is kept on the payment so the confirmation job can claim work per
 * system (one slow system never holds another's checks); submitted_at starts the expiry clock;
 * ministry_cancellations is the durable list of payments the ministry accepted but must undo.
 */
const statements = [
  `ALTER TABLE payments ADD COLUMN source text`,
  `UPDATE payments p SET source = i.source FROM invoices i WHERE i.id = p.invoice_id`,
  `ALTER TABLE payments ALTER COLUMN source SET NOT NULL`,
  `ALTER TABLE payments ADD COLUMN submitted_at timestamptz`,
  `UPDATE payments SET submitted_at = created_at WHERE status <> 'pending'`,
  `DROP INDEX IF EXISTS payments_check_idx`,
  `CREATE INDEX payments_check_idx ON payments (source, next_check_at) WHERE status IN ('pending', 'submitted')`,
  `CREATE TABLE ministry_cancellations (
      payment_id uuid PRIMARY KEY REFERENCES payments(id),
      source text NOT NULL,
      ref_num text NOT NULL,
      reason text NOT NULL,
      attempts integer NOT NULL DEFAULT 0,
      next_attempt_at timestamptz NOT NULL,
      last_error text,
      done_at timestamptz,
      created_at timestamptz NOT NULL DEFAULT now()
    )`,
  `CREATE INDEX ministry_cancellations_due_idx ON ministry_cancellations (next_attempt_at) WHERE done_at IS NULL`,
];

export async function up(db: Kysely<unknown>): Promise<void> {
  for (const statement of statements) await sql.raw(statement).execute(db);
}
