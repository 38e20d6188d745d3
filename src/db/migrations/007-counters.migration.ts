import { sql, type Kysely } from 'kysely';

/*
 * Counters that keep the reports' cost flat as history grows.
 *
 * Triggers write one delta row per change, in the transaction that makes the change, so a
 * counter can never disagree with the rows it counts. Deltas are insert-only: concurrent
 * payments never wait on a shared counter row nor deadlock on one. The counter roll-up job folds
 * them into `counters`; readers add the two together.
 *
 * Kinds (every row is one partner's):
 * - `invoice`: invoices the partner has retrieved, by stored status; an open invoice's bucket is
 *   its due date (`infinity` without one), so "overdue" stays a read-time range (`bucket < now`)
 *   over a handful of due dates. Other statuses use `infinity`. `amount` sums the invoices'
 *   amounts.
 * - `payment_day`: the partner's payments by UTC day of `created_at`, for page seeks.
 * - `payment_status`: the partner's payments by status, for /metrics.
 */
const invoiceBucket = (alias: string) =>
  `CASE WHEN ${alias}.status = 'open' THEN coalesce(${alias}.due_date, 'infinity') ELSE 'infinity'::timestamptz END`;

const OLD = 'OLD TABLE AS old_rows';
const NEW = 'NEW TABLE AS new_rows';

/** A statement-level AFTER trigger on `table` whose function runs `body` (the delta inserts). */
function deltaTrigger(fn: string, trigger: string, on: string, transitions: string[], body: string): string[] {
  return [
    `CREATE FUNCTION ${fn}() RETURNS trigger LANGUAGE plpgsql AS $$
  BEGIN
${body}
    RETURN NULL;
  END $$`,
    `CREATE TRIGGER ${trigger} AFTER ${on}
    REFERENCING ${transitions.join(' ')}
    FOR EACH STATEMENT EXECUTE FUNCTION ${fn}()`,
  ];
}

const statements = [
  `CREATE TABLE counters (
    kind text NOT NULL,
    partner_id uuid NOT NULL,
    label text NOT NULL,
    bucket timestamptz NOT NULL,
    n bigint NOT NULL,
    amount numeric(24, 2) NOT NULL,
    PRIMARY KEY (kind, partner_id, label, bucket)
  )`,
  `CREATE TABLE counter_deltas (
    id bigserial PRIMARY KEY,
    kind text NOT NULL,
    partner_id uuid NOT NULL,
    label text NOT NULL,
    bucket timestamptz NOT NULL,
    n integer NOT NULL,
    amount numeric(24, 2) NOT NULL
  )`,
  `CREATE INDEX counter_deltas_key_idx ON counter_deltas (kind, partner_id)`,
  // The invoice trigger finds the partners holding a changed invoice; the primary key leads with the partner.
  `CREATE INDEX IF NOT EXISTS partner_invoices_invoice_idx ON partner_invoices (invoice_id)`,

  // An invoice changing status, amount or due date moves it between the buckets of every partner that holds it.
  ...deltaTrigger('counters_invoices_updated', 'invoices_counters', 'UPDATE ON invoices', [OLD, NEW], `    WITH changed AS (
      SELECT o.id, o.status AS old_status, ${invoiceBucket('o')} AS old_bucket, o.amount AS old_amount,
             n.status AS new_status, ${invoiceBucket('n')} AS new_bucket, n.amount AS new_amount
      FROM old_rows o JOIN new_rows n USING (id)
    ), moved AS (
      SELECT * FROM changed
      WHERE (old_status, old_bucket, old_amount) IS DISTINCT FROM (new_status, new_bucket, new_amount)
    )
    INSERT INTO counter_deltas (kind, partner_id, label, bucket, n, amount)
    SELECT 'invoice', pi.partner_id, c.status, c.bucket, c.n, c.amount
    FROM (
      SELECT id, old_status AS status, old_bucket AS bucket, -1 AS n, -old_amount AS amount FROM moved
      UNION ALL
      SELECT id, new_status, new_bucket, 1, new_amount FROM moved
    ) c
    JOIN partner_invoices pi ON pi.invoice_id = c.id;`),

  // A link counts the invoice as it stands when the link commits. The search path upserts the
  // invoice (locking it) before linking; FOR SHARE holds the same for any path that links alone:
  // it waits for a concurrent update and reads the committed row, while the update's own deltas
  // see the link only once it has committed. So the two never both count nor both miss a change.
  ...deltaTrigger('counters_links_inserted', 'partner_invoices_counters_insert', 'INSERT ON partner_invoices', [NEW], `    INSERT INTO counter_deltas (kind, partner_id, label, bucket, n, amount)
    SELECT 'invoice', l.partner_id, i.status, ${invoiceBucket('i')}, 1, i.amount
    FROM new_rows l JOIN invoices i ON i.id = l.invoice_id
    FOR SHARE OF i;`),
  ...deltaTrigger('counters_links_deleted', 'partner_invoices_counters_delete', 'DELETE ON partner_invoices', [OLD], `    INSERT INTO counter_deltas (kind, partner_id, label, bucket, n, amount)
    SELECT 'invoice', l.partner_id, i.status, ${invoiceBucket('i')}, -1, -i.amount
    FROM old_rows l JOIN invoices i ON i.id = l.invoice_id
    FOR SHARE OF i;`),

  ...deltaTrigger('counters_payments_inserted', 'payments_counters_insert', 'INSERT ON payments', [NEW], `    INSERT INTO counter_deltas (kind, partner_id, label, bucket, n, amount)
    SELECT 'payment_status', p.partner_id, p.status, 'infinity'::timestamptz, 1, p.amount FROM new_rows p
    UNION ALL
    SELECT 'payment_day', p.partner_id, '', date_trunc('day', p.created_at, 'UTC'), 1, p.amount FROM new_rows p;`),
  ...deltaTrigger('counters_payments_updated', 'payments_counters_update', 'UPDATE ON payments', [OLD, NEW], `    INSERT INTO counter_deltas (kind, partner_id, label, bucket, n, amount)
    SELECT 'payment_status', o.partner_id, o.status, 'infinity'::timestamptz, -1, -o.amount
    FROM old_rows o JOIN new_rows n USING (id) WHERE o.status IS DISTINCT FROM n.status
    UNION ALL
    SELECT 'payment_status', n.partner_id, n.status, 'infinity'::timestamptz, 1, n.amount
    FROM old_rows o JOIN new_rows n USING (id) WHERE o.status IS DISTINCT FROM n.status;`),

  /*
   * Recomputes every counter from the rows (the migration's backfill; bulk loaders that load with
   * triggers off call it afterwards). Takes the tables' write locks so no change slips between.
   */
  `CREATE FUNCTION counters_rebuild() RETURNS void LANGUAGE plpgsql AS $$
  BEGIN
    LOCK TABLE invoices, partner_invoices, payments, counters, counter_deltas IN SHARE ROW EXCLUSIVE MODE;
    DELETE FROM counter_deltas;
    DELETE FROM counters;
    INSERT INTO counters (kind, partner_id, label, bucket, n, amount)
    SELECT 'invoice', pi.partner_id, i.status, ${invoiceBucket('i')}, count(*), sum(i.amount)
    FROM partner_invoices pi JOIN invoices i ON i.id = pi.invoice_id
    GROUP BY 1, 2, 3, 4;
    INSERT INTO counters (kind, partner_id, label, bucket, n, amount)
    SELECT 'payment_status', partner_id, status, 'infinity'::timestamptz, count(*), sum(amount) FROM payments GROUP BY 1, 2, 3, 4;
    INSERT INTO counters (kind, partner_id, label, bucket, n, amount)
    SELECT 'payment_day', partner_id, '', date_trunc('day', created_at, 'UTC'), count(*), sum(amount) FROM payments GROUP BY 1, 2, 3, 4;
  END $$`,
  `SELECT counters_rebuild()`,
];

export async function up(db: Kysely<unknown>): Promise<void> {
  for (const statement of statements) await sql.raw(statement).execute(db);
}
