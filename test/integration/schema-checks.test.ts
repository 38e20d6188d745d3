import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import { createTestContext, type TestContext } from '../helpers/test-context.js';
import {
  CASE_AUTHORS,
  CASE_OUTCOMES,
  CASE_RESOLVERS,
  CASE_STATUSES,
  CASE_TYPES,
  CANCELLATION_KINDS,
  DELIVERED_EVENTS,
  STORED_DELIVERY_STATUSES,
  DISCREPANCY_KINDS,
  DISCREPANCY_STATUSES,
  KEY_ENVIRONMENTS,
  PAYMENT_CAUSES,
  PAYMENT_STATUSES,
  PUSH_STATUSES,
  QR_STANDARDS,
  RECONCILIATION_STATUSES,
  SOURCES,
  STORED_INVOICE_STATUSES,
  WEBHOOK_DISABLED_REASONS,
} from '../../src/domain/vocabulary.js';
import { PAYMENT_TRANSITIONS } from '../../src/payments/payment.machine.js';

/** The events of the payment transition table, as the timeline names them. */
const PAYMENT_EVENTS = [...new Set(PAYMENT_TRANSITIONS.map((t) => t.event))];

/** Every column that holds a word of the vocabulary, and the words it may hold. */
const VOCABULARY_COLUMNS: Record<string, readonly string[]> = {
  'payments.status': PAYMENT_STATUSES,
  'payments.source': SOURCES,
  'payments.status_cause': PAYMENT_CAUSES,
  'payment_history.from_status': PAYMENT_STATUSES,
  'payment_history.to_status': PAYMENT_STATUSES,
  'payment_history.cause': PAYMENT_CAUSES,
  // The timeline also opens with 'created' and, for payments older than it, 'migrated'.
  'payment_history.event': [...PAYMENT_EVENTS, 'created', 'migrated'],
  'payments.status_event': PAYMENT_EVENTS,
  'invoices.status': STORED_INVOICE_STATUSES,
  'invoices.source': SOURCES,
  'ministry_cancellations.source': SOURCES,
  'ministry_cancellations.kind': CANCELLATION_KINDS,
  'events.event': DELIVERED_EVENTS,
  'webhook_deliveries.status': STORED_DELIVERY_STATUSES,
  'webhooks.disabled_reason': WEBHOOK_DISABLED_REASONS,
  'push_deliveries.status': PUSH_STATUSES,
  'partners.environment': KEY_ENVIRONMENTS,
  'partners.qr_standard': QR_STANDARDS,
  'api_keys.environment': KEY_ENVIRONMENTS,
  'discrepancies.kind': DISCREPANCY_KINDS,
  'discrepancies.status': DISCREPANCY_STATUSES,
  'discrepancies.source': SOURCES,
  'reconciliation_sources.source': SOURCES,
  'reconciliation_sources.status': ['pending', 'completed', 'failed'],
  'reconciliation_runs.status': ['running', ...RECONCILIATION_STATUSES],
  'cases.status': CASE_STATUSES,
  'cases.type': CASE_TYPES,
  'cases.outcome': CASE_OUTCOMES,
  'cases.resolved_by': CASE_RESOLVERS,
  'case_comments.author': CASE_AUTHORS,
};

/** Written only by the report counters' triggers (migration 007), never from a vocabulary. */
const TRIGGER_COLUMNS = ['counters.kind', 'counter_deltas.kind'];

/** Column names that always hold a vocabulary word: a new one must be listed above, with its CHECK. */
const VOCABULARY_NAMES = /^(status|source|kind|event|cause|environment|qr_standard|disabled_reason|from_status|to_status|status_cause|status_event|type|outcome|author)$/;

let ctx: TestContext;
let checks: { table: string; def: string }[];

beforeAll(async () => {
  ctx = await createTestContext();
  const { rows } = await sql<{ table: string; def: string }>`
    SELECT c.relname AS table, pg_get_constraintdef(k.oid) AS def
    FROM pg_constraint k JOIN pg_class c ON c.oid = k.conrelid
    WHERE k.contype = 'c' AND c.relnamespace = current_schema()::regnamespace`.execute(ctx.deps.db);
  checks = rows;
});
afterAll(() => ctx?.close());

/** The words a column's CHECK allows, read from the constraint PostgreSQL stored. */
function allowedWords(table: string, column: string): string[] | null {
  const def = checks.find((c) => c.table === table && new RegExp(`\\(+${column}\\b`).test(c.def) && /ANY|IN \(/.test(c.def))?.def;
  if (!def) return null;
  return [...def.matchAll(/'([^']*)'::text/g)].map((m) => m[1] ?? '').sort();
}

describe('the schema holds the vocabulary', () => {
  it.each(Object.entries(VOCABULARY_COLUMNS))('%s accepts exactly its words', (name, words) => {
    const [table = '', column = ''] = name.split('.');
    expect(allowedWords(table, column)).toEqual([...words].sort());
  });

  it('lists every vocabulary column the migrations create', async () => {
    const { rows } = await sql<{ table_name: string; column_name: string }>`
      SELECT table_name, column_name FROM information_schema.columns
      WHERE table_schema = current_schema() AND data_type = 'text'
        -- A monthly partition holds its table's columns and checks: the table stands for it.
        AND table_name NOT IN (SELECT relname FROM pg_class WHERE relispartition AND relnamespace = current_schema()::regnamespace)`.execute(ctx.deps.db);
    const vocabulary = rows.filter((r) => VOCABULARY_NAMES.test(r.column_name)).map((r) => `${r.table_name}.${r.column_name}`);
    expect(vocabulary.filter((name) => !(name in VOCABULARY_COLUMNS) && !TRIGGER_COLUMNS.includes(name))).toEqual([]);
  });

  it('refuses a word no code knows', async () => {
    await expect(sql`INSERT INTO events (partner_id, event, payload) VALUES (gen_random_uuid(), 'payment.teleported', '{}')`.execute(ctx.deps.db)).rejects.toThrow(/check constraint/);
  });
});
