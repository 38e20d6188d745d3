import { sql, type Kysely } from 'kysely';

/*
 * The invoice counters' trigger (migration 007) paired a statement's old and new rows with a join,
 * which PL/pgSQL planned once as a nested loop (transition tables have no statistics, see
 * migration 029): a search that refreshes a taxpayer's n invoices compared n² pairs. A table of
 * the same shape, whose trigger's plan was made on one-row updates, spent 750 ms in it for an
 * update of 3,000 rows, and 6 ms grouped as below.
 *
 * It cannot simply run without nested loops, as the payments triggers do: it then looks up the
 * partners holding each changed invoice, and a nested loop over the partner_invoices index is the
 * right plan for that. So the two sides are grouped instead of joined: each row counts -1 (old) or
 * +1 (new) under its invoice, status, bucket and amount; a row that kept all three cancels out, and
 * a changed one leaves -1 for what it was and +1 for what it is, as the join's deltas did.
 */

/** An invoice's counter bucket, as migration 007 defines it (a migration keeps its own copy, frozen with it). */
const bucket = (alias: string) => `CASE WHEN ${alias}.status = 'open' THEN coalesce(${alias}.due_date, 'infinity') ELSE 'infinity'::timestamptz END`;

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql
    .raw(
      `CREATE OR REPLACE FUNCTION counters_invoices_updated() RETURNS trigger LANGUAGE plpgsql AS $$
  BEGIN
    INSERT INTO counter_deltas (kind, partner_id, label, bucket, n, amount)
    SELECT 'invoice', pi.partner_id, c.status, c.bucket, c.n, c.n * c.amount
    FROM (
      SELECT s.id, s.status, s.bucket, s.amount, sum(s.side)::int AS n
      FROM (
        SELECT o.id, o.status, ${bucket('o')} AS bucket, o.amount, -1 AS side FROM old_rows o
        UNION ALL
        SELECT n.id, n.status, ${bucket('n')}, n.amount, 1 FROM new_rows n
      ) s
      GROUP BY s.id, s.status, s.bucket, s.amount
      HAVING sum(s.side) <> 0
    ) c
    JOIN partner_invoices pi ON pi.invoice_id = c.id;
    RETURN NULL;
  END $$`,
    )
    .execute(db);
}
