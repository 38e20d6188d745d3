/*
 * The service's closed vocabularies, each defined once. TypeBox schemas, database row types,
 * services and adapters take their types from here; the SDK, a package of its own, is held to
 * them by test/sdk/sdk-types.test.ts.
 */

/** The ministry systems invoices come from. */
export const SOURCES = ['mof', 'etax', 'police'] as const;
export type Source = (typeof SOURCES)[number];

export const QR_STANDARDS = ['qrpay', 'govstd'] as const;
export type QrStandard = (typeof QR_STANDARDS)[number];

export const PAYMENT_STATUSES = ['pending', 'submitted', 'confirmed', 'failed', 'canceled'] as const;
export type PaymentStatus = (typeof PAYMENT_STATUSES)[number];

/** What the database holds; `overdue` is derived at read time (see invoice-status.ts). */
export const STORED_INVOICE_STATUSES = ['open', 'paid', 'canceled'] as const;
export type StoredInvoiceStatus = (typeof STORED_INVOICE_STATUSES)[number];

export const INVOICE_STATUSES = ['open', 'paid', 'overdue', 'canceled'] as const;
export type InvoiceStatus = (typeof INVOICE_STATUSES)[number];

/** A partner's, and its API keys', environment. */
export const KEY_ENVIRONMENTS = ['sandbox', 'production'] as const;
export type KeyEnvironment = (typeof KEY_ENVIRONMENTS)[number];

export const APP_ENVS = ['local', ...KEY_ENVIRONMENTS] as const;
export type AppEnv = (typeof APP_ENVS)[number];

/**
 * Why a payment is canceled at the ministry: the service owes it (a refusal), the partner asked,
 * or the payment expired. `partner` and `expiry` are intents recorded before the ministry is
 * asked, finished by moving the payment (payment-end.service).
 */
export const CANCELLATION_KINDS = ['owed', 'partner', 'expiry'] as const;
export type CancellationKind = (typeof CANCELLATION_KINDS)[number];

/**
 * A push to an end user's device: waiting for its (next) attempt, sent to FCM, `skipped` because
 * no FCM credentials are configured (nothing left the process), or given up after its retries.
 */
export const PUSH_STATUSES = ['pending', 'delivered', 'skipped', 'failed'] as const;
export type PushStatus = (typeof PUSH_STATUSES)[number];

/** Kinds of leased background work, each of whose late writes is fenced by its lease. */
export const LEASED_WORK = ['confirmation_check', 'status_check', 'ministry_cancellation', 'reconciliation', 'webhook_attempt', 'push_attempt', 'idempotency_key', 'case_evidence'] as const;
export type LeasedWork = (typeof LEASED_WORK)[number];

/** A holder that lost its lease tried to write: nothing was changed; reported for the operator. */
export type StaleLeaseReport = (work: LeasedWork, id: string) => void;

/** What one process runs: everything, only the listeners, or only the background work. */
export const PROCESS_ROLES = ['all', 'api', 'worker'] as const;
export type ProcessRole = (typeof PROCESS_ROLES)[number];

export const PLATFORMS = ['ios', 'android'] as const;
export type Platform = (typeof PLATFORMS)[number];

/** The three ways to look invoices up: taxpayer number, vehicle plate, tax reference. */
export const INVOICE_FILTER_KINDS = ['ttd', 'vehicle', 'taxRef'] as const;
export type InvoiceFilterKind = (typeof INVOICE_FILTER_KINDS)[number];

/** The events a webhook can subscribe to (POST /webhooks `events`) and the events API lists. */
export const WEBHOOK_EVENTS = ['payment.submitted', 'payment.confirmed', 'payment.failed', 'payment.canceled', 'case.opened', 'case.updated', 'case.resolved'] as const;
export type WebhookEvent = (typeof WEBHOOK_EVENTS)[number];

/** Who ended a canceled payment, as `payment.canceled` says: the partner's DELETE, the ministry, or the expiry rule. */
export const CANCEL_REASONS = ['partner', 'ministry', 'expired'] as const;
export type CancelReason = (typeof CANCEL_REASONS)[number];

/** Why a webhook is disabled: the partner turned it off, or every attempt failed for WEBHOOK_DISABLE_AFTER_MS. */
export const WEBHOOK_DISABLED_REASONS = ['manual', 'failing'] as const;
export type WebhookDisabledReason = (typeof WEBHOOK_DISABLED_REASONS)[number];

/** How the partner's delivery log shows an attempt: made and succeeded, made and failed, or queued. */
export const DELIVERY_LOG_STATUSES = ['pending', 'succeeded', 'failed'] as const;
export type DeliveryLogStatus = (typeof DELIVERY_LOG_STATUSES)[number];

/** The test delivery's event: sent only on request (POST /webhooks/{id}/test), never subscribable. */
export const WEBHOOK_TEST_EVENT = 'webhook.test';

/** Every event a delivery can carry: the subscribable ones and the test delivery's. */
export const DELIVERED_EVENTS = [...WEBHOOK_EVENTS, WEBHOOK_TEST_EVENT] as const;
export type DeliveredEvent = (typeof DELIVERED_EVENTS)[number];

/**
 * Who moved a payment, as its timeline names it: the partner's own request (create, status
 * read, cancel), the confirmation job, the daily reconciliation, the expiry rule, the schema
 * migration that started the timeline of payments made before it existed, or the fresh check
 * made when the partner opened a case about the payment.
 */
export const PAYMENT_CAUSES = ['partner_request', 'confirmation_job', 'reconciliation', 'expiry', 'migration', 'case'] as const;
export type PaymentCause = (typeof PAYMENT_CAUSES)[number];

/** What a reconciliation can find wrong between the service's books and a ministry's settlement. */
export const DISCREPANCY_KINDS = ['missing_at_ministry', 'missing_locally', 'amount_mismatch', 'settled_but_canceled', 'settled_but_failed'] as const;
export type DiscrepancyKind = (typeof DISCREPANCY_KINDS)[number];

export const DISCREPANCY_STATUSES = ['open', 'resolved'] as const;
export type DiscrepancyStatus = (typeof DISCREPANCY_STATUSES)[number];

/** A reconciliation run is partial when a ministry system could not be reconciled. */
export const RECONCILIATION_STATUSES = ['completed', 'partial'] as const;
export type ReconciliationStatus = (typeof RECONCILIATION_STATUSES)[number];

/**
 * A webhook delivery's status as the operator sees it, in the words of the partner's delivery log
 * (`succeeded`, `failed`, `pending`), plus `canceled`: dropped unsent, its webhook deleted.
 */
export const DELIVERY_STATUSES = ['pending', 'succeeded', 'failed', 'canceled'] as const;
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];

/**
 * The words webhook_deliveries.status stores: a succeeded delivery is `delivered` in the table (and
 * in its partial indexes' predicates); the repository answers it as `succeeded`, which spares
 * rewriting every finished row for one word.
 */
export const STORED_DELIVERY_STATUSES = ['pending', 'delivered', 'failed', 'canceled'] as const;
export type StoredDeliveryStatus = (typeof STORED_DELIVERY_STATUSES)[number];

/** Every operator action the audit log records. */
export const AUDIT_ACTIONS = [
  'partner.create',
  'partner.update',
  'partner.rotate_key',
  'discrepancy.resolve',
  'delivery.redeliver',
  'reconciliation.run',
  'case.take',
  'case.comment',
  'case.resolve',
] as const;
export type AuditAction = (typeof AUDIT_ACTIONS)[number];

/**
 * What a bank says went wrong with a payment when it opens a case: the citizen paid and the
 * ministry still shows the invoice unpaid, paid twice, paid the wrong amount, or a canceled
 * payment was not reversed.
 */
export const CASE_TYPES = ['paid_not_updated', 'paid_twice', 'wrong_amount', 'canceled_not_reversed', 'other'] as const;
export type CaseType = (typeof CASE_TYPES)[number];

/** A case: raised, taken by an operator, past its due time unresolved, or answered. */
export const CASE_STATUSES = ['open', 'in_progress', 'escalated', 'resolved'] as const;
export type CaseStatus = (typeof CASE_STATUSES)[number];

/** The statuses of a case still waiting for its answer: at most one such case per payment and type. */
export const UNRESOLVED_CASE_STATUSES = ['open', 'in_progress', 'escalated'] as const satisfies readonly CaseStatus[];

/** How a case was answered. */
export const CASE_OUTCOMES = ['confirmed', 'reversed', 'refunded_by_partner', 'no_fault_found', 'other'] as const;
export type CaseOutcome = (typeof CASE_OUTCOMES)[number];

/** Who answered a case: the service itself (its fresh check found the payment confirmed) or an operator. */
export const CASE_RESOLVERS = ['service', 'operator'] as const;
export type CaseResolver = (typeof CASE_RESOLVERS)[number];

/** Who wrote a case's comment: the bank (POST /cases/{id}/comments) or an operator. */
export const CASE_AUTHORS = ['partner', 'operator'] as const;
export type CaseAuthor = (typeof CASE_AUTHORS)[number];
