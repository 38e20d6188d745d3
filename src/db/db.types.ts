/*
 * Generated from the migrated schema by scripts/db-types.generator.ts: do not edit. After a
 * migration, run `npm run db:types`; column types narrower than the SQL types are named there.
 */

import type { AuditAction, CancellationKind, CaseAuthor, CaseOutcome, CaseResolver, CaseStatus, CaseType, DiscrepancyKind, DiscrepancyStatus, KeyEnvironment, PaymentCause, PaymentStatus, Platform, PushStatus, QrStandard, ReconciliationStatus, Source, StoredInvoiceStatus, WebhookDisabledReason, WebhookEvent } from "../domain/vocabulary.js";
import type { CreatedAt, Decimal, JsonColumn, SourceOutcome, StoredDeliveryStatus } from "./column-values.types.js";
import type { ColumnType } from "kysely";

export type Generated<T> = T extends ColumnType<infer S, infer I, infer U>
  ? ColumnType<S, I | undefined, U>
  : ColumnType<T, T | undefined, T>;

export type Int8 = ColumnType<string, bigint | number | string, bigint | number | string>;

export type Timestamp = ColumnType<Date, Date | string, Date | string>;

export interface ApiKeysTable {
  created_at: Generated<CreatedAt>;
  environment: KeyEnvironment;
  expires_at: Timestamp | null;
  id: Generated<string>;
  key_hash: string;
  key_prefix: string;
  partner_id: string;
}

export interface AuditLogTable {
  action: AuditAction;
  after: ColumnType<Record<string, unknown> | null, string, string>;
  before: ColumnType<Record<string, unknown> | null, string, string>;
  created_at: Timestamp;
  id: Generated<Int8>;
  operator: string;
  target_id: string;
  target_type: string;
}

export interface CaseCommentsTable {
  author: CaseAuthor;
  case_id: string;
  created_at: Timestamp;
  id: Generated<Int8>;
  operator: string | null;
  text: string;
}

/** A partner's case about one of its payments: answered by an operator, or by the service when its fresh check finds the payment confirmed. */
export interface CasesTable {
  assignee: string | null;
  created_at: Timestamp;
  description: string;
  due_at: Timestamp;
  escalated_at: Timestamp | null;
  /**
   * What the service gathered when the case opened (CaseEvidence); null until then.
   */
  evidence: ColumnType<Record<string, unknown> | null, string | undefined, string | null>;
  evidence_at: Timestamp | null;
  /**
   * While a pass gathers the evidence: its lease, fenced by evidence_token.
   */
  evidence_lease_until: Timestamp | null;
  evidence_token: string | null;
  id: Generated<string>;
  ministry_reference: string | null;
  outcome: CaseOutcome | null;
  partner_id: string;
  payment_id: string;
  position: Generated<Int8>;
  resolution_note: string | null;
  resolved_at: Timestamp | null;
  resolved_by: CaseResolver | null;
  resolved_operator: string | null;
  status: CaseStatus;
  type: CaseType;
  updated_at: Timestamp;
}

/** A change to a counter, written by the triggers in the changing transaction; folded in by the roll-up job. */
export interface CounterDeltasTable {
  amount: Decimal;
  bucket: Timestamp;
  id: Generated<Int8>;
  kind: string;
  label: string;
  /**
   * integer here, read only in a UNION ALL with counters' bigint n, which makes it a bigint (a string).
   */
  n: Int8;
  partner_id: string;
}

/** One partner's count and amount for a label and bucket (see migration 007-counters). */
export interface CountersTable {
  amount: Decimal;
  bucket: Timestamp;
  kind: string;
  label: string;
  n: Int8;
  partner_id: string;
}

export interface DevicesTable {
  created_at: Generated<CreatedAt>;
  fcm_token: string;
  id: Generated<string>;
  partner_id: string;
  platform: Platform;
  updated_at: Generated<Timestamp>;
  user_id: string;
}

export interface DiscrepanciesTable {
  created_at: Timestamp;
  finance_day: string;
  id: Generated<string>;
  kind: DiscrepancyKind;
  local_amount: Decimal | null;
  ministry_amount: Decimal | null;
  note: string | null;
  partner_id: string | null;
  payment_id: string;
  ref_num: string;
  resolved_at: Timestamp | null;
  resolved_by: string | null;
  run_id: string | null;
  source: Source;
  status: Generated<DiscrepancyStatus>;
}

/** One row: the highest feed position ever given (positions are never reused). */
export interface EventPositionsTable {
  id: ColumnType<boolean, never, never>;
  last: Int8;
}

export interface EventsTable {
  created_at: Generated<CreatedAt>;
  event: string;
  id: Generated<string>;
  partner_id: string;
  payload: ColumnType<Record<string, unknown>, string, never>;
  /**
   * The payment a payment.* event is about (its payload's id); null for a webhook.test event.
   */
  payment_id: ColumnType<string | null, string | null | undefined, never>;
  /**
   * Its position in the feed, given after commit by the assigner (event-log repository); null until then.
   */
  sequence: ColumnType<string | null, never, number | string>;
}

export interface IdempotencyKeysTable {
  created_at: Generated<CreatedAt>;
  expires_at: Timestamp;
  key: string;
  /**
   * The current claim's token; null only on rows claimed before tokens existed.
   */
  lease_token: string | null;
  locked_until: Timestamp;
  partner_id: string;
  payment_id: string | null;
  request_hash: string;
  response_body: ColumnType<unknown | null, string | null, string | null>;
  response_status: number | null;
  state: "in_progress" | "completed";
}

export interface InvoicesTable {
  /**
   * The balance: what is still owed.
   */
  amount: Decimal;
  /**
   * What the ministry billed before a payment of ours was confirmed: the most our books let it collect.
   */
  billed_amount: Decimal;
  created_at: Generated<CreatedAt>;
  description: string;
  due_date: Timestamp | null;
  id: Generated<string>;
  issued_at: Timestamp | null;
  payee_id: string;
  payee_name: string;
  payer_name: string | null;
  payer_register: string | null;
  ref_num: string;
  source: Source;
  status: StoredInvoiceStatus;
  tax_ref: string | null;
  updated_at: Generated<Timestamp>;
  vehicle_no: string | null;
  /**
   * jsonb so a number stays a number and a string stays a string.
   */
  year: ColumnType<number | string | null, string | null, string | null>;
}

/** A payment the ministry accepted and must cancel again; kept until the ministry confirms. */
export interface MinistryCancellationsTable {
  attempts: Generated<number>;
  created_at: Generated<CreatedAt>;
  done_at: Timestamp | null;
  /**
   * `owed`: the service refused or expired a payment the ministry accepted; `partner`: the partner's cancel, recorded before the ministry call.
   */
  kind: Generated<CancellationKind>;
  last_error: string | null;
  next_attempt_at: Timestamp;
  payment_id: string;
  reason: string;
  ref_num: string;
  source: Source;
}

export interface PartnerInvoicesTable {
  first_seen_at: Generated<CreatedAt>;
  invoice_id: string;
  last_seen_at: Generated<Timestamp>;
  partner_id: string;
}

export interface PartnersTable {
  active: boolean;
  created_at: Generated<CreatedAt>;
  environment: KeyEnvironment;
  id: Generated<string>;
  name: string;
  qr_standard: QrStandard;
  rate_limit_per_hour: number | null;
  rate_limit_per_minute: number | null;
  /**
   * All three set, or all null (the partner uses the configured defaults).
   */
  rate_limit_per_second: number | null;
  updated_at: Generated<Timestamp>;
}

export interface PaymentHistoryTable {
  at: Timestamp;
  cause: PaymentCause;
  detail: ColumnType<Record<string, unknown> | null, string | null, never>;
  event: string;
  from_status: PaymentStatus | null;
  id: Generated<Int8>;
  payment_id: string;
  to_status: PaymentStatus;
}

export interface PaymentInvoicesTable {
  /**
   * true while the payment holds the invoice; a partial unique index allows one holder.
   */
  active: boolean;
  invoice_id: string;
  payment_id: string;
  position: number;
}

export interface PaymentsTable {
  amount: Decimal;
  canceled_at: Timestamp | null;
  check_attempts: Generated<number>;
  created_at: Generated<CreatedAt>;
  /**
   * How long after submission the payment expires unpaid, when not PAYMENT_EXPIRY_MS (a sandbox scenario's); set once at creation.
   */
  expiry_ms: ColumnType<number | null, never, never>;
  failure_reason: string | null;
  id: Generated<string>;
  invoice_id: string;
  next_check_at: Timestamp | null;
  paid_at: Timestamp | null;
  partner_id: string;
  /**
   * The partner's own reference of the payment (X-Partner-Reference); written once at creation. Null when none came.
   */
  partner_reference: ColumnType<string | null, string | null | undefined, never>;
  /**
   * The EMVCo payload the payment was created with; written once, never updated. Null for older payments.
   */
  qr_text: ColumnType<string | null, string | undefined, never>;
  /**
   * A confirmed part-payment: what the ministry still showed owing on its invoice. Null otherwise.
   */
  remaining_balance: ColumnType<string | null, never, string | null>;
  /**
   * The ministry system the payment was sent to (its invoice's source).
   */
  source: Source;
  status: PaymentStatus;
  status_cause: PaymentCause | null;
  /**
   * A live read's lease token; null while the job holds the lease (its token is check_attempts).
   */
  status_check_token: string | null;
  /**
   * The end of the lease of the status check under way (the confirmation job's or a live read's); null or past when none is.
   */
  status_check_until: Timestamp | null;
  /**
   * When the latest status check ended.
   */
  status_checked_at: Timestamp | null;
  status_detail: ColumnType<Record<string, unknown> | null, string | null, string | null>;
  /**
   * The event, cause and ministry answer of the latest state change; triggers copy them into payment_history.
   */
  status_event: string | null;
  submitted_at: Timestamp | null;
  /**
   * The W3C traceparent of the request span that created the payment; its background work continues that trace. Null for older payments.
   */
  trace_parent: ColumnType<string | null, string | null | undefined, never>;
  /**
   * The partner's tracestate that came with that request, carried along unchanged.
   */
  trace_state: ColumnType<string | null, string | null | undefined, never>;
  updated_at: Generated<Timestamp>;
  /**
   * The partner's end user (X-User-Id), whose devices are pushed when the payment is confirmed.
   */
  user_id: string | null;
}

export interface PushDeliveriesTable {
  attempts: Generated<number>;
  created_at: Generated<CreatedAt>;
  delivered_at: Timestamp | null;
  device_id: string;
  event_id: string;
  id: Generated<string>;
  last_error: string | null;
  /**
   * When the next attempt is due; while a worker holds the row it is the lease expiry.
   */
  next_attempt_at: Timestamp;
  partner_id: string;
  status: Generated<PushStatus>;
}

export interface ReconciliationRunsTable {
  auto_confirmed: Generated<number>;
  discrepancies: Generated<number>;
  finance_day: string;
  finished_at: Timestamp | null;
  id: Generated<string>;
  matched: Generated<number>;
  /**
   * null when the daily schedule ran it.
   */
  operator: string | null;
  sources: Generated<JsonColumn<SourceOutcome[]>>;
  started_at: Timestamp;
  status: ReconciliationStatus | "running";
}

export interface ReconciliationSourcesTable {
  attempts: Generated<number>;
  completed_at: Timestamp | null;
  finance_day: string;
  last_error: string | null;
  /**
   * The current hold's token; every write under the hold presents it (migration 015).
   */
  lease_token: string | null;
  /**
   * While an instance reconciles this day and source, until when it holds it.
   */
  lease_until: Timestamp | null;
  next_attempt_at: Timestamp;
  source: Source;
  status: Generated<"pending" | "completed" | "failed">;
  updated_at: Generated<Timestamp>;
}

/** An invoice a partner planted at the simulated ministry (sandbox only): visible to that partner alone. */
export interface SandboxInvoicesTable {
  created_at: Generated<CreatedAt>;
  invoice_id: string;
  partner_id: string;
  /**
   * How long after submission its payments expire unpaid; null for PAYMENT_EXPIRY_MS.
   */
  payment_expiry_ms: number | null;
}

export interface WebhookAttemptsTable {
  attempt: number;
  created_at: Generated<CreatedAt>;
  delivery_created_at: Timestamp | null;
  delivery_id: string;
  duration_ms: number;
  error: string | null;
  id: Generated<string>;
  next_retry_at: Timestamp | null;
  status_code: number | null;
  succeeded: boolean;
  webhook_id: string;
}

export interface WebhookDeliveriesTable {
  attempts: Generated<number>;
  created_at: Generated<CreatedAt>;
  delivered_at: Timestamp | null;
  event_id: string;
  id: Generated<string>;
  /**
   * When the next attempt is due; while a worker holds the row it is the lease expiry.
   */
  next_attempt_at: Timestamp;
  status: StoredDeliveryStatus;
  updated_at: Generated<Timestamp>;
  webhook_id: string;
}

export interface WebhooksTable {
  created_at: Generated<CreatedAt>;
  deleted_at: Timestamp | null;
  /**
   * Set with `disabled_reason` while the webhook is disabled: nothing is queued for it and its pending deliveries wait.
   */
  disabled_at: ColumnType<Date | null, Date | null | undefined, Date | null>;
  disabled_reason: ColumnType<WebhookDisabledReason | null, WebhookDisabledReason | null | undefined, WebhookDisabledReason | null>;
  /**
   * When it was last enabled again; failures before it do not count toward disabling it.
   */
  enabled_at: ColumnType<Date | null, Date | null | undefined, Date | null>;
  events: ColumnType<WebhookEvent[], string, string>;
  id: Generated<string>;
  partner_id: string;
  /**
   * The secret a rotation replaced: it still signs deliveries until `previous_secret_expires_at`.
   */
  previous_secret_ciphertext: ColumnType<string | null, string | null | undefined, string | null>;
  previous_secret_expires_at: ColumnType<Date | null, Date | null | undefined, Date | null>;
  /**
   * AES-256-GCM; the plaintext secret never reaches the database.
   */
  secret_ciphertext: string;
  /**
   * Since when its attempts fail or time out; null while the latest one succeeded (see the slow lane).
   */
  slow_since: ColumnType<Date | null, Date | null | undefined, Date | null>;
  url: string;
}

export interface Database {
  api_keys: ApiKeysTable;
  audit_log: AuditLogTable;
  case_comments: CaseCommentsTable;
  cases: CasesTable;
  counter_deltas: CounterDeltasTable;
  counters: CountersTable;
  devices: DevicesTable;
  discrepancies: DiscrepanciesTable;
  event_positions: EventPositionsTable;
  events: EventsTable;
  idempotency_keys: IdempotencyKeysTable;
  invoices: InvoicesTable;
  ministry_cancellations: MinistryCancellationsTable;
  partner_invoices: PartnerInvoicesTable;
  partners: PartnersTable;
  payment_history: PaymentHistoryTable;
  payment_invoices: PaymentInvoicesTable;
  payments: PaymentsTable;
  push_deliveries: PushDeliveriesTable;
  reconciliation_runs: ReconciliationRunsTable;
  reconciliation_sources: ReconciliationSourcesTable;
  sandbox_invoices: SandboxInvoicesTable;
  webhook_attempts: WebhookAttemptsTable;
  webhook_deliveries: WebhookDeliveriesTable;
  webhooks: WebhooksTable;
}

export type { SourceOutcome, StoredDeliveryStatus } from "./column-values.types.js";
