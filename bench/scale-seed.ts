import { addMonths, monthPartitionName, monthStart } from '../src/domain/partition-months.js';
import { PARTITIONED_TABLES } from '../src/db/repositories/partition.repository.js';

/**
 * A year of production in one scratch database, built by `generate_series` inside PostgreSQL (no
 * rows cross the wire), for `npm run bench:scale`. The shape is the issue's:
 * - three ministry systems; most taxpayers hold ~10 invoices, a few companies 5,000 each;
 * - the measured partner has retrieved 60% of the invoices, and every invoice is also linked to
 *   one of 40 other partners;
 * - payments (30% of the invoice count) over the past year: 70% confirmed, 10% canceled, 10%
 *   failed, 8% submitted, 2% pending; two events, two deliveries and two attempts each; one
 *   idempotency key each, with a stored response of about a kilobyte.
 *
 * Events, deliveries, attempts and pushes are partitioned by month: the past months' partitions
 * are made first (`pastMonths`, 13 by default; 0 for a database of the layout before partitions).
 *
 * Rows load with triggers off (`session_replication_role = replica`), then `counters_rebuild()`
 * (migration 007) recounts the report counters from the rows, as a bulk loader must.
 * Unresolved payments are due for a check in 30 days, so the service's jobs stay idle while the
 * endpoints are measured; the claim queries themselves are timed and explained separately.
 */
export interface SeedShape {
  invoices: number;
  payments: number;
  /** The measured partner, created through the admin API before seeding. */
  partnerId: string;
  /** Its webhook, registered through the API; the seeded history of deliveries hangs off it. */
  webhookId: string;
  /** The 40 other partners (admin API) and one webhook each (seeded). */
  otherPartnerIds: string[];
  /** Months before the current one to make partitions for (default 13): a year of history must land somewhere. */
  pastMonths?: number;
}

/** CREATE TABLE ... PARTITION OF for the `count` months before the current one, of every partitioned table. */
export function pastMonthPartitions(count: number, now = new Date()): string[] {
  const current = monthStart(now);
  return PARTITIONED_TABLES.flatMap((table) =>
    Array.from({ length: count }, (_, i) => {
      const month = addMonths(current, -(i + 1));
      return `CREATE TABLE IF NOT EXISTS ${monthPartitionName(table, month)} PARTITION OF ${table} FOR VALUES FROM ('${month.toISOString()}') TO ('${addMonths(month, 1).toISOString()}')`;
    }),
  );
}

const COMPANY_INVOICES = 5000;
const TAXPAYER_INVOICES = 10;
const YEAR_S = 365 * 24 * 3600;

/** Deterministic UUIDs per table, so rows reference each other without lookups. */
const uuidOf = (prefix: string, expr: string) => `('${prefix}-0000-4000-8000-' || lpad(to_hex(${expr}), 12, '0'))::uuid`;

export function seedStatements(shape: SeedShape): string[] {
  const n = shape.invoices;
  const companies = Math.max(1, Math.floor(n / 250_000));
  const companyRows = Math.min(companies * COMPANY_INVOICES, Math.floor(n / 2));
  const others = `ARRAY[${shape.otherPartnerIds.map((id) => `'${id}'::uuid`).join(',')}]`;
  const partnerOfInvoice = (g: string) => `CASE WHEN ${g} % 10 < 6 THEN '${shape.partnerId}'::uuid ELSE (${others})[1 + ${g} % ${shape.otherPartnerIds.length}] END`;
  // Payment j pays invoice 3j; its status cycles through 50 slots in the issue's proportions.
  const paymentStatus = `CASE WHEN j % 50 < 35 THEN 'confirmed' WHEN j % 50 < 40 THEN 'canceled' WHEN j % 50 < 45 THEN 'failed' WHEN j % 50 < 49 THEN 'submitted' ELSE 'pending' END`;
  const paymentCreated = `now() - ((j::bigint * 7919) % ${YEAR_S}) * interval '1 second' - interval '1 hour'`;
  return [
    ...pastMonthPartitions(shape.pastMonths ?? 13),
    `SET session_replication_role = replica`,
    `INSERT INTO webhooks (id, partner_id, url, events, secret_ciphertext)
       SELECT ${uuidOf('30000000', 'g')}, (${others})[g], 'https://example.test/hook', '["payment.confirmed","payment.submitted"]', 'x'
       FROM generate_series(1, ${shape.otherPartnerIds.length}) g`,
    `INSERT INTO invoices (id, source, ref_num, description, amount, billed_amount, status, due_date, issued_at, vehicle_no, tax_ref, payer_register, payer_name, payee_id, payee_name, year, created_at, updated_at)
       SELECT ${uuidOf('10000000', 'g')}, (ARRAY['mof','etax','police'])[1 + g % 3], 'SC-' || g, 'Scale invoice', 1000 + (g % 97) * 500, 1000 + (g % 97) * 500,
              CASE WHEN g % 3 = 0 AND (g / 3) <= ${shape.payments} AND (g / 3) % 50 < 35 THEN 'paid' ELSE 'open' END,
              CASE WHEN g % 4 = 0 THEN NULL ELSE now() + ((g % 730) - 365) * interval '1 day' END,
              now() - (g % 365) * interval '1 day',
              CASE WHEN g % 3 = 2 THEN 'V' || (g % 900000) END,
              CASE WHEN g % 3 = 1 THEN 'TR' || g END,
              CASE WHEN g <= ${companyRows} THEN 'CO' || ((g - 1) / ${COMPANY_INVOICES}) ELSE 'TP' || ((g - 1) / ${TAXPAYER_INVOICES}) END,
              'Payer', 'ORG-1', 'Org', to_jsonb(2026), now() - (g % 365) * interval '1 day', now()
       FROM generate_series(1, ${n}) g`,
    `INSERT INTO partner_invoices (partner_id, invoice_id, first_seen_at, last_seen_at)
       SELECT '${shape.partnerId}'::uuid, ${uuidOf('10000000', 'g')}, now() - interval '30 days', now() - interval '1 day'
       FROM generate_series(1, ${n}) g WHERE g % 10 < 6`,
    `INSERT INTO partner_invoices (partner_id, invoice_id, first_seen_at, last_seen_at)
       SELECT (${others})[1 + g % ${shape.otherPartnerIds.length}], ${uuidOf('10000000', 'g')}, now() - interval '30 days', now() - interval '1 day'
       FROM generate_series(1, ${n}) g`,
    `INSERT INTO payments (id, partner_id, invoice_id, source, amount, status, failure_reason, submitted_at, paid_at, canceled_at, next_check_at, created_at, updated_at)
       SELECT ${uuidOf('20000000', 'j')}, ${partnerOfInvoice('(3 * j)')}, ${uuidOf('10000000', '3 * j')},
              (ARRAY['mof','etax','police'])[1 + (3 * j) % 3], 1000 + ((3 * j) % 97) * 500, s.status,
              CASE WHEN s.status = 'failed' THEN 'rejected by the ministry' END,
              CASE WHEN s.status <> 'pending' THEN s.created END,
              CASE WHEN s.status = 'confirmed' THEN s.created + interval '5 seconds' END,
              CASE WHEN s.status = 'canceled' THEN s.created + interval '10 minutes' END,
              CASE WHEN s.status IN ('pending', 'submitted') THEN now() + interval '30 days' END,
              s.created, s.created
       FROM generate_series(1, ${shape.payments}) j,
            LATERAL (SELECT ${paymentStatus} AS status, ${paymentCreated} AS created) s`,
    `INSERT INTO payment_invoices (payment_id, invoice_id, position, active)
       SELECT id, invoice_id, 0, status IN ('pending', 'submitted', 'confirmed') FROM payments`,
    // Two events per payment (submitted, then confirmed), each delivered once to its partner's webhook.
    // Each payload as the outbox writes it for its type (GET /events serves them).
    `INSERT INTO events (id, partner_id, event, payload, payment_id, created_at)
       SELECT ${uuidOf('40000000', 'p.k * 2 + e.i')}, p.partner_id, (ARRAY['payment.submitted','payment.confirmed'])[1 + e.i],
              CASE WHEN e.i = 0 THEN jsonb_build_object('id', p.id, 'invoiceId', p.invoice_id, 'partnerReference', NULL)
                   ELSE jsonb_build_object('id', p.id, 'amount', p.amount, 'partnerReference', NULL) END,
              p.id, p.created_at + e.i * interval '5 seconds'
       FROM (SELECT id, partner_id, invoice_id, status, amount, created_at, row_number() OVER () AS k FROM payments) p, generate_series(0, 1) e(i)`,
    `INSERT INTO webhook_deliveries (id, webhook_id, event_id, status, attempts, next_attempt_at, delivered_at, created_at, updated_at)
       SELECT ${uuidOf('50000000', 'k')}, w.id, ev.id, 'delivered', 1, ev.created_at, ev.created_at + interval '50 milliseconds', ev.created_at, ev.created_at
       FROM (SELECT id, partner_id, created_at, row_number() OVER () AS k FROM events) ev
       JOIN webhooks w ON w.partner_id = ev.partner_id AND w.deleted_at IS NULL`,
    `INSERT INTO webhook_attempts (delivery_id, delivery_created_at, webhook_id, attempt, succeeded, status_code, duration_ms, created_at)
       SELECT id, created_at, webhook_id, 1, true, 200, 50, created_at FROM webhook_deliveries`,
    `INSERT INTO idempotency_keys (partner_id, key, request_hash, state, locked_until, payment_id, response_status, response_body, created_at, expires_at)
       SELECT partner_id, 'idem-' || id, md5(id::text), 'completed', created_at, id, 201,
              jsonb_build_object('id', id, 'status', 'submitted', 'qrText', repeat(md5(id::text), 24)), created_at, created_at + interval '48 hours'
       FROM payments`,
    `SET session_replication_role = DEFAULT`,
    `SELECT counters_rebuild()`,
    `VACUUM ANALYZE`,
  ];
}
