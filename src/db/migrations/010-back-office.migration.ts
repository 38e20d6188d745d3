import { sql, type Kysely } from 'kysely';

/*
 * The operator's back office.
 * - reconciliation_sources: one row per finance day and ministry system; its lease lets one
 *   instance at a time reconcile that day and source, and its schedule retries a source that
 *   could not answer.
 * - reconciliation_runs: every run (by an operator or the daily schedule) and what it counted.
 * - discrepancies: one row per finding; the unique key makes a rerun of a day find the same rows
 *   instead of adding new ones. payment_id is text: a ministry may name an id that is not ours.
 * - audit_log: every operator action with its operator, target and the state before and after.
 */
const statements = [
  `CREATE TABLE reconciliation_sources (
    finance_day text NOT NULL,
    source text NOT NULL,
    status text NOT NULL DEFAULT 'pending',
    attempts integer NOT NULL DEFAULT 0,
    next_attempt_at timestamptz NOT NULL,
    lease_until timestamptz,
    last_error text,
    completed_at timestamptz,
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (finance_day, source)
  )`,
  `CREATE INDEX reconciliation_sources_due_idx ON reconciliation_sources (next_attempt_at) WHERE status <> 'completed'`,
  `CREATE TABLE reconciliation_runs (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    finance_day text NOT NULL,
    status text NOT NULL,
    matched integer NOT NULL DEFAULT 0,
    auto_confirmed integer NOT NULL DEFAULT 0,
    discrepancies integer NOT NULL DEFAULT 0,
    sources jsonb NOT NULL DEFAULT '[]'::jsonb,
    operator text,
    started_at timestamptz NOT NULL,
    finished_at timestamptz
  )`,
  `CREATE INDEX reconciliation_runs_started_idx ON reconciliation_runs (started_at DESC, id DESC)`,
  `CREATE INDEX reconciliation_runs_day_idx ON reconciliation_runs (finance_day, started_at DESC)`,
  `CREATE TABLE discrepancies (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    kind text NOT NULL,
    finance_day text NOT NULL,
    source text NOT NULL,
    ref_num text NOT NULL,
    payment_id text NOT NULL,
    partner_id uuid,
    local_amount numeric(24, 2),
    ministry_amount numeric(24, 2),
    status text NOT NULL DEFAULT 'open',
    note text,
    run_id uuid,
    created_at timestamptz NOT NULL,
    resolved_at timestamptz,
    resolved_by text,
    UNIQUE (finance_day, source, kind, payment_id)
  )`,
  `CREATE INDEX discrepancies_status_idx ON discrepancies (status, created_at DESC)`,
  `CREATE INDEX discrepancies_day_idx ON discrepancies (finance_day, source)`,
  // The day's confirmed payments of one ministry system, by the ministry's time of settlement.
  `CREATE INDEX payments_settled_idx ON payments (source, paid_at) WHERE status = 'confirmed'`,
  // The admin search: newest first overall, by status, by invoice.
  `CREATE INDEX payments_created_idx ON payments (created_at DESC, id DESC)`,
  `CREATE INDEX payments_status_created_idx ON payments (status, created_at DESC, id DESC)`,
  `CREATE INDEX payments_invoice_idx ON payments (invoice_id)`,
  `CREATE INDEX IF NOT EXISTS invoices_ref_num_idx ON invoices (ref_num)`,
  `CREATE INDEX IF NOT EXISTS payment_invoices_invoice_idx ON payment_invoices (invoice_id)`,
  // The admin delivery log: newest first, overall or per webhook (a partner's are its webhooks').
  `CREATE INDEX webhook_deliveries_created_idx ON webhook_deliveries (created_at DESC, id DESC)`,
  `CREATE INDEX webhook_deliveries_webhook_created_idx ON webhook_deliveries (webhook_id, created_at DESC, id DESC)`,
  `CREATE TABLE audit_log (
    id bigserial PRIMARY KEY,
    operator text NOT NULL,
    action text NOT NULL,
    target_type text NOT NULL,
    target_id text NOT NULL,
    before jsonb,
    after jsonb,
    created_at timestamptz NOT NULL
  )`,
  `CREATE INDEX audit_log_operator_idx ON audit_log (operator, id DESC)`,
];

export async function up(db: Kysely<unknown>): Promise<void> {
  for (const statement of statements) await sql.raw(statement).execute(db);
}
