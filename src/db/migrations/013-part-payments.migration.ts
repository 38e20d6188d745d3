import { sql, type Kysely } from 'kysely';

/*
 * A ministry may take less than an invoice's balance as a part-payment. Once it confirms one, the
 * balance it still shows owing is kept on the payment: the invoice stays open with that balance
 * and is no longer held, so the next payment can take it. Null for a payment that settled its
 * invoice, and for every payment not confirmed.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE payments ADD COLUMN remaining_balance numeric(16, 2) CHECK (remaining_balance > 0)`.execute(db);
}
