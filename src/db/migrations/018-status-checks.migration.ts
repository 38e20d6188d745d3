import { sql, type Kysely } from 'kysely';

/**
 * Every column that holds one word of the domain's vocabulary accepts only those words, so a
 * typo in a repository, a hand-run UPDATE or a half-deployed release cannot store a state no
 * code knows. The lists are written out: a migration must mean the same thing for ever, and
 * test/integration/schema-checks.test.ts holds each one to its list in src/domain.
 */
const PAYMENT_EVENTS = [
  'ministry_accepted',
  'ministry_refused',
  'never_received',
  'linked_invoice_taken',
  'ministry_approved',
  'ministry_canceled',
  'ministry_rejected',
  'ministry_forgot',
  'expired',
  'partner_canceled',
];

const CHECKS: [table: string, column: string, words: string[]][] = [
  ['payments', 'source', ['mof', 'etax', 'police']],
  ['payments', 'status_cause', ['partner_request', 'confirmation_job', 'reconciliation', 'expiry', 'migration']],
  ['invoices', 'source', ['mof', 'etax', 'police']],
  ['payment_history', 'from_status', ['pending', 'submitted', 'confirmed', 'failed', 'canceled']],
  ['payment_history', 'to_status', ['pending', 'submitted', 'confirmed', 'failed', 'canceled']],
  ['payment_history', 'cause', ['partner_request', 'confirmation_job', 'reconciliation', 'expiry', 'migration']],
  ['payment_history', 'event', [...PAYMENT_EVENTS, 'created', 'migrated']],
  ['payments', 'status_event', PAYMENT_EVENTS],
  ['ministry_cancellations', 'source', ['mof', 'etax', 'police']],
  ['events', 'event', ['payment.submitted', 'payment.confirmed', 'webhook.test']],
  ['push_deliveries', 'status', ['pending', 'delivered', 'failed']],
  ['api_keys', 'environment', ['sandbox', 'production']],
  ['discrepancies', 'kind', ['missing_at_ministry', 'missing_locally', 'amount_mismatch', 'settled_but_canceled']],
  ['discrepancies', 'status', ['open', 'resolved']],
  ['discrepancies', 'source', ['mof', 'etax', 'police']],
  ['reconciliation_sources', 'source', ['mof', 'etax', 'police']],
  ['reconciliation_sources', 'status', ['pending', 'completed', 'failed']],
  ['reconciliation_runs', 'status', ['running', 'completed', 'partial']],
];

export async function up(db: Kysely<unknown>): Promise<void> {
  for (const [table, column, words] of CHECKS) {
    const allowed = sql.join(words.map((w) => sql.lit(w)));
    await sql`ALTER TABLE ${sql.table(table)} ADD CONSTRAINT ${sql.id(`${table}_${column}_check`)} CHECK (${sql.ref(column)} IN (${allowed}))`.execute(db);
  }
}
