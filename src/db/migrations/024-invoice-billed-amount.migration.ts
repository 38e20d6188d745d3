import { sql, type Kysely } from 'kysely';

/*
 * What a ministry billed for an invoice before any payment of ours was confirmed for it: the
 * ceiling of what our books let it collect. `amount` stays the balance; once a part-payment is
 * confirmed, neither a confirmation nor a lookup may raise that balance above the billed amount
 * less what our confirmed payments took, whatever a lagging ministry view says. An invoice already
 * part-paid gets back what its confirmed part-payments took.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE invoices ADD COLUMN billed_amount numeric(16, 2)`.execute(db);
  await sql`
    UPDATE invoices i SET billed_amount = i.amount + coalesce((
      SELECT sum(p.amount) FROM payments p
      WHERE p.invoice_id = i.id AND p.status = 'confirmed' AND p.remaining_balance IS NOT NULL
    ), 0)`.execute(db);
  await sql`ALTER TABLE invoices ALTER COLUMN billed_amount SET NOT NULL`.execute(db);
  await sql`ALTER TABLE invoices ADD CONSTRAINT invoices_billed_amount_check CHECK (billed_amount >= 0)`.execute(db);
}
