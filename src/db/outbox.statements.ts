import { sql, type RawBuilder } from 'kysely';
import { trxOf, type UnitOfWork } from './unit-of-work.js';
import type { Clock } from '../domain/clock.port.js';
import { isUuid } from '../domain/uuid.js';
import type { Static } from 'typebox';
import type { WebhookEvent } from '../domain/vocabulary.js';
import type { EVENT_DATA } from '../schemas/event.schema.js';

/**
 * One event of a payment or of a case as the outbox writes it: its type and its data, typed from the schema of
 * that type's data (EVENT_DATA), the same one the webhook body, GET /events and the OpenAPI
 * document are made from.
 */
export type PaymentEvent = { [E in WebhookEvent]: { event: E; data: Static<(typeof EVENT_DATA)[E]> } }[WebhookEvent];

export interface OutboxOptions {
  now: Clock;
  /** Delay of the first delivery attempt (the head of the retry schedule, normally 0). */
  firstAttemptDelayMs?: number;
}

/**
 * An outbox write that rides along in another statement: CTEs `ev` (one event row per row of the
 * CTE named `source`, which must yield `partner_id`) and `deliveries` (one pending delivery per
 * enabled webhook of that partner subscribed to the event; a disabled one catches up through
 * recover, since the event is kept). For `payment.confirmed` the source is the
 * payment row and also yields `user_id`: `pushes` queues one push per device of that end user
 * and partner. Being part of the statement that changes the payment, it commits or fails with the
 * change itself.
 */
export interface OutboxWrite {
  ctes(source: string): RawBuilder<unknown>;
}

/**
 * Outbox rows: always written in the statement or transaction that changes the payment's state,
 * so a crash after commit cannot lose a notification. A delivery and a push carry their event's
 * created_at: the three share a monthly partition and leave together.
 */
/** One push delivery per device of the payment's end user (none when the payment names no user). */
function pushes(source: string, dueAt: Date): RawBuilder<unknown> {
  return sql`, pushes AS (
          INSERT INTO push_deliveries (event_id, partner_id, device_id, status, next_attempt_at, created_at)
          SELECT ev.id, ev.partner_id, d.id, 'pending', ${dueAt}::timestamptz, ev.created_at
          FROM ev JOIN ${sql.table(source)} s ON s.partner_id = ev.partner_id
          JOIN devices d ON d.partner_id = s.partner_id AND d.user_id = s.user_id
          WHERE s.user_id IS NOT NULL
        )`;
}

/** The outbox: the statements that write a payment event, and its deliveries and pushes, inside the statement or transaction that moves the payment. It holds no database: every write runs on the caller's. */
export function createOutbox(opts: OutboxOptions) {
  const { now } = opts;

  function outbox(e: PaymentEvent): OutboxWrite {
    const dueAt = new Date(now().getTime() + (opts.firstAttemptDelayMs ?? 0));
    // A case event is indexed by its payment, so /events?paymentId= lists it beside the payment's own.
    // Only a real payment id is indexed for the paymentId filters; other ids (synthetic load) stay in the payload.
    const subject = 'paymentId' in e.data ? e.data.paymentId : e.data.id;
    const paymentId = isUuid(subject) ? subject : null;
    return {
      ctes: (source) => sql`ev AS (
          INSERT INTO events (partner_id, event, payload, payment_id)
          SELECT partner_id, ${e.event}, ${JSON.stringify(e.data)}::jsonb, ${paymentId}::uuid FROM ${sql.table(source)}
          RETURNING id, partner_id, created_at
        ), deliveries AS (
          INSERT INTO webhook_deliveries (webhook_id, event_id, status, next_attempt_at, created_at)
          SELECT w.id, ev.id, 'pending', ${dueAt}::timestamptz, ev.created_at
          FROM webhooks w JOIN ev ON w.partner_id = ev.partner_id
          WHERE w.deleted_at IS NULL AND w.disabled_at IS NULL AND w.events @> ${JSON.stringify([e.event])}::jsonb
        )${e.event === 'payment.confirmed' ? pushes(source, dueAt) : sql``}`,
    };
  }

  return {
    outbox,

    /** Appends an event for a partner in the caller's unit of work; returns the event id. */
    async append(uow: UnitOfWork, partnerId: string, e: PaymentEvent): Promise<string> {
      const { rows } = await sql<{ id: string }>`
        WITH src AS (SELECT ${partnerId}::uuid AS partner_id, NULL::text AS user_id), ${outbox(e).ctes('src')}
        SELECT id FROM ev`.execute(trxOf(uow));
      const row = rows[0];
      if (!row) throw new Error('event insert returned no row');
      return row.id;
    },
  };
}

export type Outbox = ReturnType<typeof createOutbox>;
