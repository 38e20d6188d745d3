import { sql, type Kysely } from 'kysely';

/** Runs one SQL text and gives back its rows: a Kysely database or a plain pg client. */
export type RunSql = (text: string) => Promise<Record<string, unknown>[]>;

export function kyselyRunner<DB>(db: Kysely<DB>): RunSql {
  return async (text) => (await sql.raw<Record<string, unknown>>(text).execute(db)).rows;
}

/**
 * The money invariants, each a query for the rows that break it (none is the only good answer).
 * "Active" payments hold invoices: pending, submitted and confirmed ones. A confirmed part-payment
 * (the ministry still showed a balance: `remaining_balance`) settled nothing: it lets go of its
 * invoices, which stay open for the next payment.
 */
const INVARIANTS: Record<string, string> = {
  'an invoice is held by at most one active payment': `
    SELECT pi.invoice_id, count(*) AS holders
    FROM payment_invoices pi JOIN payments p ON p.id = pi.payment_id
    WHERE pi.active AND p.status IN ('pending', 'submitted', 'confirmed')
    GROUP BY pi.invoice_id HAVING count(*) > 1`,
  'no failed or canceled payment holds an invoice': `
    SELECT p.id, p.status, pi.invoice_id
    FROM payment_invoices pi JOIN payments p ON p.id = pi.payment_id
    WHERE pi.active AND p.status IN ('failed', 'canceled')`,
  'every paid invoice a payment touched is covered by exactly one confirmed payment': `
    SELECT i.id, (
      SELECT count(*) FROM payment_invoices pi JOIN payments p ON p.id = pi.payment_id
      WHERE pi.invoice_id = i.id AND pi.active AND p.status = 'confirmed'
    ) AS confirmed
    FROM invoices i
    WHERE i.status = 'paid' AND EXISTS (SELECT 1 FROM payment_invoices pi WHERE pi.invoice_id = i.id)
      AND (
        SELECT count(*) FROM payment_invoices pi JOIN payments p ON p.id = pi.payment_id
        WHERE pi.invoice_id = i.id AND pi.active AND p.status = 'confirmed'
      ) <> 1`,
  'no invoice is settled by two confirmed payments': `
    SELECT pi.invoice_id, count(*) AS confirmed
    FROM payment_invoices pi JOIN payments p ON p.id = pi.payment_id
    WHERE p.status = 'confirmed' AND p.remaining_balance IS NULL
    GROUP BY pi.invoice_id HAVING count(*) > 1`,
  'the confirmed payments of an invoice sum to at most what it billed': `
    SELECT i.id, i.billed_amount, sum(p.amount) AS confirmed
    FROM invoices i JOIN payments p ON p.invoice_id = i.id
    WHERE p.status = 'confirmed'
    GROUP BY i.id, i.billed_amount HAVING sum(p.amount) > i.billed_amount`,
  /*
   * A payment that settled its invoice holds it and its linked ones; a part-payment holds none of
   * its own. One that had settled its invoice until a reversal of an earlier part-payment reopened
   * it became a part-payment, and still holds the linked invoices it paid.
   */
  'a confirmed payment holds every invoice it settled and none it paid only part of': `
    SELECT p.id, pi.invoice_id, pi.active, p.remaining_balance
    FROM payment_invoices pi JOIN payments p ON p.id = pi.payment_id
    WHERE p.status = 'confirmed'
      AND CASE WHEN pi.invoice_id = p.invoice_id THEN pi.active = (p.remaining_balance IS NOT NULL)
               ELSE p.remaining_balance IS NULL AND NOT pi.active END`,
  /*
   * The books of each invoice: what it billed is what it still owes plus what the confirmed
   * payments paid on it. A part-payment paid its amount on its own invoice; a payment that settled
   * invoices paid its amount on its own and, on each linked one it holds, the balance it cleared
   * there (a paid invoice keeps the balance its last payment cleared as its amount, and owes nothing).
   * The books are ours from the first payment of ours the ministry confirmed on the invoice (even
   * if it was reversed since); one paid or billed anew at the ministry before that is its own.
   */
  'every invoice bills what it owes plus what confirmed payments paid on it, and is paid exactly when it owes nothing': `
    WITH paid_on AS (
      SELECT p.invoice_id, p.amount FROM payments p WHERE p.status = 'confirmed' AND p.remaining_balance IS NOT NULL
      UNION ALL
      SELECT pi.invoice_id, CASE WHEN pi.invoice_id = p.invoice_id THEN p.amount ELSE i.amount END
      FROM payment_invoices pi JOIN payments p ON p.id = pi.payment_id JOIN invoices i ON i.id = pi.invoice_id
      WHERE pi.active AND p.status = 'confirmed'
    ), books AS (
      SELECT i.id, i.ref_num, i.status, i.billed_amount, CASE WHEN i.status = 'paid' THEN 0 ELSE i.amount END AS owed,
        coalesce((SELECT sum(o.amount) FROM paid_on o WHERE o.invoice_id = i.id), 0) AS paid
      FROM invoices i
      WHERE i.status <> 'canceled' AND EXISTS (
        SELECT 1 FROM payment_invoices pi JOIN payments p ON p.id = pi.payment_id WHERE pi.invoice_id = i.id AND p.paid_at IS NOT NULL
      )
    )
    SELECT * FROM books WHERE billed_amount <> owed + paid OR (status = 'paid') <> (owed = 0)`,
  'no payment records a remaining balance unless the ministry confirmed it': `
    SELECT p.id, p.status, p.remaining_balance FROM payments p
    WHERE p.remaining_balance IS NOT NULL AND (p.status IN ('pending', 'submitted', 'failed') OR p.paid_at IS NULL)`,
  'every invoice a confirmed payment holds is paid': `
    SELECT p.id, i.id AS invoice_id, i.status
    FROM payment_invoices pi JOIN payments p ON p.id = pi.payment_id JOIN invoices i ON i.id = pi.invoice_id
    WHERE pi.active AND p.status = 'confirmed' AND i.status <> 'paid'`,
  'every unresolved payment holds its own invoice': `
    SELECT p.id, p.status FROM payments p
    WHERE p.status IN ('pending', 'submitted')
      AND NOT EXISTS (SELECT 1 FROM payment_invoices pi WHERE pi.payment_id = p.id AND pi.invoice_id = p.invoice_id AND pi.active)`,
  /*
   * An independent recount of every counter of migration 007 (rolled-up totals plus pending
   * deltas): a counter the triggers got wrong shows as a row with both figures.
   */
  'every counter equals a recount of the rows it counts': `
    WITH kept AS (
      SELECT kind, partner_id, label, bucket, sum(n) AS n, sum(amount) AS amount
      FROM (SELECT kind, partner_id, label, bucket, n, amount FROM counters
            UNION ALL SELECT kind, partner_id, label, bucket, n, amount FROM counter_deltas) c
      GROUP BY kind, partner_id, label, bucket
      HAVING sum(n) <> 0 OR sum(amount) <> 0
    ), counted AS (
      SELECT 'invoice' AS kind, pi.partner_id, i.status AS label,
             CASE WHEN i.status = 'open' AND i.due_date IS NOT NULL THEN i.due_date ELSE 'infinity'::timestamptz END AS bucket,
             count(*) AS n, sum(i.amount) AS amount
      FROM partner_invoices pi JOIN invoices i ON i.id = pi.invoice_id
      GROUP BY 1, 2, 3, 4
      UNION ALL
      SELECT 'payment_status', partner_id, status, 'infinity'::timestamptz, count(*), sum(amount) FROM payments GROUP BY 1, 2, 3, 4
      UNION ALL
      SELECT 'payment_day', partner_id, '', date_trunc('day', created_at, 'UTC'), count(*), sum(amount) FROM payments GROUP BY 1, 2, 3, 4
    )
    SELECT coalesce(k.kind, c.kind) AS kind, coalesce(k.partner_id, c.partner_id) AS partner_id,
           coalesce(k.label, c.label) AS label, coalesce(k.bucket, c.bucket) AS bucket,
           k.n AS kept, c.n AS counted, k.amount AS kept_amount, c.amount AS counted_amount
    FROM kept k FULL JOIN counted c
      ON c.kind = k.kind AND c.partner_id = k.partner_id AND c.label = k.label AND c.bucket = k.bucket
    WHERE k.n IS DISTINCT FROM c.n OR k.amount IS DISTINCT FROM c.amount`,
};

export interface Violation {
  invariant: string;
  rows: Record<string, unknown>[];
}

/** Every broken invariant with the rows that break it; an empty list when the books hold. */
export async function checkInvariants(run: RunSql): Promise<Violation[]> {
  const found: Violation[] = [];
  for (const [invariant, text] of Object.entries(INVARIANTS)) {
    const rows = await run(text);
    if (rows.length > 0) found.push({ invariant, rows });
  }
  return found;
}
