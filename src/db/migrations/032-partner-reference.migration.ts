import { sql, type Kysely } from 'kysely';

/*
 * The bank's own reference of a payment (X-Partner-Reference on POST /payments), so a partner can
 * tie the payment, its events and its settlement entries to its own transaction: 1-64 printable
 * ASCII characters without spaces, as the header schema takes it. Nullable with no default:
 * adding it rewrites no row, and older payments have none.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  // [!-~] is \x21-\x7E, the header's pattern.
  await sql`ALTER TABLE payments ADD COLUMN partner_reference text CHECK (partner_reference ~ '^[!-~]{1,64}$')`.execute(db);
}
