import type { ColumnType, Generated } from 'kysely';
import type { AuditAction, CancellationKind, DeliveryStatus, DiscrepancyKind, DiscrepancyStatus, KeyEnvironment, PaymentCause, ReconciliationStatus, PaymentStatus, Platform, PushStatus, QrStandard, Source, StoredInvoiceStatus, WebhookDisabledReason, WebhookEvent } from '../domain/vocabulary.js';

type Timestamp = ColumnType<Date, Date | string, Date | string>;
type CreatedAt = ColumnType<Date, Date | string | undefined, never>;
type UpdatedAt = ColumnType<Date, Date | string | undefined, Date | string>;
/** NUMERIC comes back as a decimal string from both drivers; never parsed to float for arithmetic. */
type Numeric = ColumnType<string, string, string>;
/** bigint: node-postgres returns it as a string (exceeds 2^53 in principle). */
type Int8 = ColumnType<string, string | number | bigint, string | number | bigint>;

export interface PartnersTable {
  id: Generated<string>;
  name: string;
  qr_standard: QrStandard;
  environment: KeyEnvironment;
  active: boolean;
  /** All three set, or all null (the partner uses the configured defaults). */
  rate_limit_per_second: number | null;
  rate_limit_per_minute: number | null;
  rate_limit_per_hour: number | null;
  created_at: CreatedAt;
  updated_at: UpdatedAt;
}

export interface ApiKeysTable {
  id: Generated<string>;
  partner_id: string;
  key_hash: string;
  key_prefix: string;
  environment: KeyEnvironment;
  expires_at: Timestamp | null;
  created_at: CreatedAt;
}

export interface InvoicesTable {
  id: Generated<string>;
  source: Source;
  ref_num: string;
  description: string;
  /** The balance: what is still owed. */
  amount: Numeric;
  /** What the ministry billed before a payment of ours was confirmed: the most our books let it collect. */
  billed_amount: Numeric;
  status: StoredInvoiceStatus;
  due_date: Timestamp | null;
  issued_at: Timestamp | null;
  vehicle_no: string | null;
  tax_ref: string | null;
  payer_register: string | null;
  payer_name: string | null;
  payee_id: string;
  payee_name: string;
  /** jsonb so a number stays a number and a string stays a string. */
  year: ColumnType<number | string | null, string | null, string | null>;
  created_at: CreatedAt;
  updated_at: UpdatedAt;
}

export interface PartnerInvoicesTable {
  partner_id: string;
  invoice_id: string;
  first_seen_at: CreatedAt;
  last_seen_at: UpdatedAt;
}

export type { PaymentStatus };

export interface PaymentsTable {
  id: Generated<string>;
  partner_id: string;
  invoice_id: string;
  amount: Numeric;
  /** The ministry system the payment was sent to (its invoice's source). */
  source: Source;
  status: PaymentStatus;
  failure_reason: string | null;
  submitted_at: Timestamp | null;
  paid_at: Timestamp | null;
  canceled_at: Timestamp | null;
  next_check_at: Timestamp | null;
  check_attempts: Generated<number>;
  /** The event, cause and ministry answer of the latest state change; triggers copy them into payment_history. */
  status_event: string | null;
  status_cause: PaymentCause | null;
  status_detail: ColumnType<Record<string, unknown> | null, string | null, string | null>;
  /** The partner's end user (X-User-Id), whose devices are pushed when the payment is confirmed. */
  user_id: string | null;
  /** The EMVCo payload the payment was created with; written once, never updated. Null for older payments. */
  qr_text: ColumnType<string | null, string | undefined, never>;
  /** A confirmed part-payment: what the ministry still showed owing on its invoice. Null otherwise. */
  remaining_balance: ColumnType<string | null, never, string | null>;
  /** The end of the lease of the status check under way (the confirmation job's or a live read's); null or past when none is. */
  status_check_until: Timestamp | null;
  /** A live read's lease token; null while the job holds the lease (its token is check_attempts). */
  status_check_token: string | null;
  /** When the latest status check ended. */
  status_checked_at: Timestamp | null;
  /** How long after submission the payment expires unpaid, when not PAYMENT_EXPIRY_MS (a sandbox scenario's); set once at creation. */
  expiry_ms: ColumnType<number | null, never, never>;
  /** The W3C traceparent of the request span that created the payment; its background work continues that trace. Null for older payments. */
  trace_parent: ColumnType<string | null, string | null | undefined, never>;
  /** The partner's tracestate that came with that request, carried along unchanged. */
  trace_state: ColumnType<string | null, string | null | undefined, never>;
  /** The partner's own reference of the payment (X-Partner-Reference); written once at creation. Null when none came. */
  partner_reference: ColumnType<string | null, string | null | undefined, never>;
  created_at: CreatedAt;
  updated_at: UpdatedAt;
}

/** An invoice a partner planted at the simulated ministry (sandbox only): visible to that partner alone. */
export interface SandboxInvoicesTable {
  invoice_id: string;
  partner_id: string;
  /** How long after submission its payments expire unpaid; null for PAYMENT_EXPIRY_MS. */
  payment_expiry_ms: number | null;
  created_at: CreatedAt;
}

export interface PaymentHistoryTable {
  id: Generated<Int8>;
  payment_id: string;
  from_status: PaymentStatus | null;
  to_status: PaymentStatus;
  event: string;
  cause: PaymentCause;
  detail: ColumnType<Record<string, unknown> | null, string | null, never>;
  at: Timestamp;
}

export interface PaymentInvoicesTable {
  payment_id: string;
  invoice_id: string;
  position: number;
  /** true while the payment holds the invoice; a partial unique index allows one holder. */
  active: boolean;
}

export interface IdempotencyKeysTable {
  partner_id: string;
  key: string;
  request_hash: string;
  state: 'in_progress' | 'completed';
  locked_until: Timestamp;
  /** The current claim's token; null only on rows claimed before tokens existed. */
  lease_token: string | null;
  payment_id: string | null;
  response_status: number | null;
  response_body: ColumnType<unknown, string | null, string | null>;
  created_at: CreatedAt;
  expires_at: Timestamp;
}

export interface EventsTable {
  id: Generated<string>;
  partner_id: string;
  event: string;
  payload: ColumnType<Record<string, unknown>, string, never>;
  /** The payment a payment.* event is about (its payload's id); null for a webhook.test event. */
  payment_id: ColumnType<string | null, string | null | undefined, never>;
  created_at: CreatedAt;
  /** Its position in the feed, given after commit by the assigner (event-log repository); null until then. */
  sequence: ColumnType<string | null, never, string | number>;
}

/** One row: the highest feed position ever given (positions are never reused). */
export interface EventPositionsTable {
  id: ColumnType<boolean, never, never>;
  last: Int8;
}

export interface WebhooksTable {
  id: Generated<string>;
  partner_id: string;
  url: string;
  events: ColumnType<WebhookEvent[], string, string>;
  /** AES-256-GCM; the plaintext secret never reaches the database. */
  secret_ciphertext: string;
  created_at: CreatedAt;
  deleted_at: Timestamp | null;
  /** Since when its attempts fail or time out; null while the latest one succeeded (see the slow lane). */
  slow_since: ColumnType<Date | null, Date | null | undefined, Date | null>;
  /** Set with `disabled_reason` while the webhook is disabled: nothing is queued for it and its pending deliveries wait. */
  disabled_at: ColumnType<Date | null, Date | null | undefined, Date | null>;
  disabled_reason: ColumnType<WebhookDisabledReason | null, WebhookDisabledReason | null | undefined, WebhookDisabledReason | null>;
  /** When it was last enabled again; failures before it do not count toward disabling it. */
  enabled_at: ColumnType<Date | null, Date | null | undefined, Date | null>;
  /** The secret a rotation replaced: it still signs deliveries until `previous_secret_expires_at`. */
  previous_secret_ciphertext: ColumnType<string | null, string | null | undefined, string | null>;
  previous_secret_expires_at: ColumnType<Date | null, Date | null | undefined, Date | null>;
}

/**
 * The stored word for a delivery's status: a succeeded delivery is `delivered` in the table (and
 * in its partial indexes' predicates); the repository answers it as `succeeded` (DeliveryStatus),
 * which spares rewriting every finished row for one word.
 */
export type StoredDeliveryStatus = Exclude<DeliveryStatus, 'succeeded'> | 'delivered';

export interface WebhookDeliveriesTable {
  id: Generated<string>;
  webhook_id: string;
  event_id: string;
  status: StoredDeliveryStatus;
  attempts: Generated<number>;
  /** When the next attempt is due; while a worker holds the row it is the lease expiry. */
  next_attempt_at: Timestamp;
  delivered_at: Timestamp | null;
  created_at: CreatedAt;
  updated_at: UpdatedAt;
}

export interface WebhookAttemptsTable {
  id: Generated<string>;
  delivery_id: string;
  webhook_id: string;
  attempt: number;
  succeeded: boolean;
  status_code: number | null;
  duration_ms: number;
  error: string | null;
  next_retry_at: Timestamp | null;
  created_at: CreatedAt;
}

export interface DevicesTable {
  id: Generated<string>;
  partner_id: string;
  user_id: string;
  fcm_token: string;
  platform: Platform;
  created_at: CreatedAt;
  updated_at: UpdatedAt;
}

/** A payment the ministry accepted and must cancel again; kept until the ministry confirms. */
export interface MinistryCancellationsTable {
  payment_id: string;
  source: Source;
  ref_num: string;
  reason: string;
  attempts: Generated<number>;
  next_attempt_at: Timestamp;
  last_error: string | null;
  done_at: Timestamp | null;
  created_at: CreatedAt;
  /** `owed`: the service refused or expired a payment the ministry accepted; `partner`: the partner's cancel, recorded before the ministry call. */
  kind: Generated<CancellationKind>;
}

/** One partner's count and amount for a label and bucket (see migration 007-counters). */
export interface CountersTable {
  kind: string;
  partner_id: string;
  label: string;
  bucket: Timestamp;
  n: Int8;
  amount: Numeric;
}

/** A change to a counter, written by the triggers in the changing transaction; folded in by the roll-up job. */
export interface CounterDeltasTable extends CountersTable {
  id: Generated<Int8>;
}

type Json<T> = ColumnType<T, string, string>;

export interface ReconciliationSourcesTable {
  finance_day: string;
  source: Source;
  status: 'pending' | 'completed' | 'failed';
  attempts: Generated<number>;
  next_attempt_at: Timestamp;
  /** While an instance reconciles this day and source, until when it holds it. */
  lease_until: Timestamp | null;
  /** The current hold's token; every write under the hold presents it (migration 015). */
  lease_token: string | null;
  last_error: string | null;
  completed_at: Timestamp | null;
  updated_at: UpdatedAt;
}

export interface SourceOutcome {
  source: Source;
  status: 'completed' | 'failed';
  matched: number;
  autoConfirmed: number;
  discrepancies: number;
  error: string | null;
}

export interface ReconciliationRunsTable {
  id: Generated<string>;
  finance_day: string;
  status: ReconciliationStatus | 'running';
  matched: Generated<number>;
  auto_confirmed: Generated<number>;
  discrepancies: Generated<number>;
  sources: Json<SourceOutcome[]>;
  /** null when the daily schedule ran it. */
  operator: string | null;
  started_at: Timestamp;
  finished_at: Timestamp | null;
}

export interface DiscrepanciesTable {
  id: Generated<string>;
  kind: DiscrepancyKind;
  finance_day: string;
  source: Source;
  ref_num: string;
  payment_id: string;
  partner_id: string | null;
  local_amount: Numeric | null;
  ministry_amount: Numeric | null;
  status: DiscrepancyStatus;
  note: string | null;
  run_id: string | null;
  created_at: Timestamp;
  resolved_at: Timestamp | null;
  resolved_by: string | null;
}

export interface AuditLogTable {
  id: Generated<Int8>;
  operator: string;
  action: AuditAction;
  target_type: string;
  target_id: string;
  before: Json<Record<string, unknown> | null>;
  after: Json<Record<string, unknown> | null>;
  created_at: Timestamp;
}

export interface PushDeliveriesTable {
  id: Generated<string>;
  event_id: string;
  partner_id: string;
  device_id: string;
  status: PushStatus;
  attempts: Generated<number>;
  /** When the next attempt is due; while a worker holds the row it is the lease expiry. */
  next_attempt_at: Timestamp;
  last_error: string | null;
  delivered_at: Timestamp | null;
  created_at: CreatedAt;
}

export interface Database {
  partners: PartnersTable;
  api_keys: ApiKeysTable;
  invoices: InvoicesTable;
  partner_invoices: PartnerInvoicesTable;
  payments: PaymentsTable;
  payment_invoices: PaymentInvoicesTable;
  payment_history: PaymentHistoryTable;
  idempotency_keys: IdempotencyKeysTable;
  events: EventsTable;
  event_positions: EventPositionsTable;
  webhooks: WebhooksTable;
  webhook_deliveries: WebhookDeliveriesTable;
  webhook_attempts: WebhookAttemptsTable;
  devices: DevicesTable;
  ministry_cancellations: MinistryCancellationsTable;
  counters: CountersTable;
  counter_deltas: CounterDeltasTable;
  reconciliation_sources: ReconciliationSourcesTable;
  reconciliation_runs: ReconciliationRunsTable;
  discrepancies: DiscrepanciesTable;
  audit_log: AuditLogTable;
  push_deliveries: PushDeliveriesTable;
  sandbox_invoices: SandboxInvoicesTable;
}
