import { sql, type Kysely } from 'kysely';

/*
 * A partner's case about one of its payments (the citizen says it went wrong), its comments, and
 * the evidence the service gathers when it opens. At most one unresolved case per payment and type
 * (the partial unique index), so a retried POST /cases finds the first one instead of a second.
 * `position` orders a partner's list newest first and is what its page cursor holds. Each change
 * of a case is an event of the partner's (case.opened, case.updated, case.resolved).
 */
const STATEMENTS = [
  `CREATE TABLE cases (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    position bigserial NOT NULL UNIQUE,
    partner_id uuid NOT NULL REFERENCES partners (id),
    payment_id uuid NOT NULL REFERENCES payments (id),
    type text NOT NULL CHECK (type IN ('paid_not_updated', 'paid_twice', 'wrong_amount', 'canceled_not_reversed', 'other')),
    status text NOT NULL CHECK (status IN ('open', 'in_progress', 'escalated', 'resolved')),
    description text NOT NULL CHECK (char_length(description) BETWEEN 1 AND 2000),
    created_at timestamptz NOT NULL,
    updated_at timestamptz NOT NULL,
    due_at timestamptz NOT NULL,
    escalated_at timestamptz,
    assignee text,
    outcome text CHECK (outcome IN ('confirmed', 'reversed', 'refunded_by_partner', 'no_fault_found', 'other')),
    ministry_reference text,
    resolution_note text,
    resolved_at timestamptz,
    resolved_by text CHECK (resolved_by IN ('service', 'operator')),
    resolved_operator text,
    evidence jsonb,
    evidence_at timestamptz,
    evidence_token uuid,
    evidence_lease_until timestamptz,
    CHECK ((status = 'resolved') = (outcome IS NOT NULL AND resolved_at IS NOT NULL AND resolved_by IS NOT NULL))
  )`,
  `CREATE UNIQUE INDEX cases_one_unresolved_idx ON cases (payment_id, type) WHERE status <> 'resolved'`,
  `CREATE INDEX cases_partner_position_idx ON cases (partner_id, position DESC)`,
  `CREATE INDEX cases_unresolved_due_idx ON cases (due_at) WHERE status <> 'resolved'`,
  `CREATE INDEX cases_evidence_pending_idx ON cases (created_at) WHERE evidence_at IS NULL`,
  `CREATE TABLE case_comments (
    id bigserial PRIMARY KEY,
    case_id uuid NOT NULL REFERENCES cases (id) ON DELETE CASCADE,
    author text NOT NULL CHECK (author IN ('partner', 'operator')),
    operator text,
    text text NOT NULL CHECK (char_length(text) BETWEEN 1 AND 2000),
    created_at timestamptz NOT NULL
  )`,
  `CREATE INDEX case_comments_case_idx ON case_comments (case_id, id)`,
  // A case's evidence lists the payment's reconciliation findings.
  `CREATE INDEX discrepancies_payment_idx ON discrepancies (payment_id)`,
  // The bank hears of its cases as events; the list is written out, as every migration's is.
  `ALTER TABLE events DROP CONSTRAINT events_event_check`,
  `ALTER TABLE events ADD CONSTRAINT events_event_check CHECK (event IN ('payment.submitted', 'payment.confirmed', 'payment.failed', 'payment.canceled', 'case.opened', 'case.updated', 'case.resolved', 'webhook.test'))`,
  // A case's fresh check may confirm its payment: the timeline names the case as the cause.
  `ALTER TABLE payments DROP CONSTRAINT payments_status_cause_check`,
  `ALTER TABLE payments ADD CONSTRAINT payments_status_cause_check CHECK (status_cause IN ('partner_request', 'confirmation_job', 'reconciliation', 'expiry', 'migration', 'case'))`,
  `ALTER TABLE payment_history DROP CONSTRAINT payment_history_cause_check`,
  `ALTER TABLE payment_history ADD CONSTRAINT payment_history_cause_check CHECK (cause IN ('partner_request', 'confirmation_job', 'reconciliation', 'expiry', 'migration', 'case'))`,
];

export async function up(db: Kysely<unknown>): Promise<void> {
  for (const statement of STATEMENTS) await sql.raw(statement).execute(db);
}
