import { sql, type Kysely } from 'kysely';

/*
 * A payment's timeline: one row per state change, with the event that made it, its cause (who
 * acted) and the ministry's answer behind it. Every statement that changes a payment's status
 * also sets status_event, status_cause and status_detail on the row; statement-level triggers
 * copy them into payment_history in the changing transaction, so no path can move a payment
 * without leaving its trace, and a path that forgets to name its event fails loudly.
 */
const statements = [
  `ALTER TABLE payments ADD COLUMN status_event text`,
  `ALTER TABLE payments ADD COLUMN status_cause text`,
  `ALTER TABLE payments ADD COLUMN status_detail jsonb`,
  `CREATE TABLE payment_history (
    id bigserial PRIMARY KEY,
    payment_id uuid NOT NULL REFERENCES payments(id) ON DELETE CASCADE,
    from_status text,
    to_status text NOT NULL,
    event text NOT NULL,
    cause text NOT NULL,
    detail jsonb,
    at timestamptz NOT NULL
  )`,
  `CREATE INDEX payment_history_payment_idx ON payment_history (payment_id, id)`,
  `CREATE FUNCTION payment_history_insert() RETURNS trigger LANGUAGE plpgsql AS $$
  BEGIN
    INSERT INTO payment_history (payment_id, from_status, to_status, event, cause, detail, at)
    SELECT n.id, NULL, n.status, coalesce(n.status_event, 'created'), coalesce(n.status_cause, 'partner_request'), n.status_detail, n.created_at
    FROM new_rows n;
    RETURN NULL;
  END $$`,
  `CREATE TRIGGER payment_history_insert_trg AFTER INSERT ON payments
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION payment_history_insert()`,
  `CREATE FUNCTION payment_history_update() RETURNS trigger LANGUAGE plpgsql AS $$
  BEGIN
    IF EXISTS (
      SELECT 1 FROM old_rows o JOIN new_rows n ON n.id = o.id
      WHERE n.status <> o.status AND (n.status_event IS NOT DISTINCT FROM o.status_event OR n.status_cause IS NULL)
    ) THEN
      RAISE EXCEPTION 'a payment changed status without naming its event and cause';
    END IF;
    INSERT INTO payment_history (payment_id, from_status, to_status, event, cause, detail, at)
    SELECT n.id, o.status, n.status, n.status_event, n.status_cause, n.status_detail, n.updated_at
    FROM old_rows o JOIN new_rows n ON n.id = o.id
    WHERE n.status <> o.status;
    RETURN NULL;
  END $$`,
  `CREATE TRIGGER payment_history_update_trg AFTER UPDATE ON payments
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION payment_history_update()`,
  // Payments that exist already start their timeline from what is known of them.
  `INSERT INTO payment_history (payment_id, from_status, to_status, event, cause, detail, at)
    SELECT id, NULL, status, 'migrated', 'migration', NULL, updated_at FROM payments`,
];

export async function up(db: Kysely<unknown>): Promise<void> {
  for (const statement of statements) await sql.raw(statement).execute(db);
}
