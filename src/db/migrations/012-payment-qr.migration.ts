import { sql, type Kysely } from 'kysely';

/*
 * The EMVCo payload a payment was created with. Every answer about the payment (the 201, an
 * idempotent replay, the QR landing page) shows this text, so the customer's QR stays the one the
 * partner was given whatever later changes the partner's QR standard or the scheme config. Payments
 * from before it have no text and are shown with a payload built from their current inputs.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE payments ADD COLUMN qr_text text`.execute(db);
}
