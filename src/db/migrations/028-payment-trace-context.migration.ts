import { sql, type Kysely } from 'kysely';

/*
 * The W3C trace context of the request that created a payment (its span's traceparent, and the
 * partner's tracestate when one came), so the payment's background work (status checks,
 * cancellations, webhook and push deliveries) continues that trace. Nullable with no default:
 * adding them rewrites no row, and older payments start fresh traces.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE payments ADD COLUMN trace_parent text CHECK (trace_parent ~ '^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$'), ADD COLUMN trace_state text`.execute(db);
}
