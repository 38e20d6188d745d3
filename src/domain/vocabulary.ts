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

export const PLATFORMS = ['ios', 'android'] as const;
export type Platform = (typeof PLATFORMS)[number];

/** The three ways to look invoices up: taxpayer number, vehicle plate, tax reference. */
export const INVOICE_FILTER_KINDS = ['ttd', 'vehicle', 'taxRef'] as const;
export type InvoiceFilterKind = (typeof INVOICE_FILTER_KINDS)[number];

export const WEBHOOK_EVENTS = ['payment.submitted', 'payment.confirmed'] as const;
export type WebhookEvent = (typeof WEBHOOK_EVENTS)[number];
