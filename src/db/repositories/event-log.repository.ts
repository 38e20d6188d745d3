import { sql } from 'kysely';
import type { Db } from '../database.js';
import { WEBHOOK_EVENTS, type WebhookEvent } from '../../domain/vocabulary.js';

/** A partner's event as the events API shows it: the payload is the webhook body's `data`. */
export interface EventRow {
  id: string;
  event: WebhookEvent;
  payload: Record<string, unknown>;
  created_at: Date;
}

export interface EventFilter {
  type?: WebhookEvent;
  paymentId?: string;
  /** Inclusive. */
  from?: Date;
  /** Exclusive. */
  to?: Date;
}

/**
 * Reads of a partner's payment events, newest first, keyset-paged after the event id `after`.
 * `webhook.test` events are the partner's own test deliveries, not something that happened, so
 * they are never listed.
 */
export function createEventLogRepository(db: Db) {
  const partnerEvents = (partnerId: string) =>
    db
      .selectFrom('events')
      .select(['id', 'event', 'payload', 'created_at'])
      .where('partner_id', '=', partnerId)
      .where('event', 'in', [...WEBHOOK_EVENTS]);

  return {
    /** At most `limit` rows; the caller asks for one more than a page to learn whether another follows. */
    async list(partnerId: string, filter: EventFilter, after: string | null, limit: number): Promise<EventRow[]> {
      let q = partnerEvents(partnerId).orderBy('created_at', 'desc').orderBy('id', 'desc').limit(limit);
      if (filter.type) q = q.where('event', '=', filter.type);
      if (filter.paymentId) q = q.where('payment_id', '=', filter.paymentId);
      if (filter.from) q = q.where('created_at', '>=', filter.from);
      if (filter.to) q = q.where('created_at', '<', filter.to);
      if (after) {
        q = q.where(sql<boolean>`(created_at, id) < (SELECT c.created_at, c.id FROM events c WHERE c.id = ${after}::uuid AND c.partner_id = ${partnerId}::uuid)`);
      }
      const rows = await q.execute();
      return rows.map((r) => ({ ...r, event: r.event as WebhookEvent }));
    },

    async get(partnerId: string, id: string): Promise<EventRow | undefined> {
      const row = await partnerEvents(partnerId).where('id', '=', id).executeTakeFirst();
      return row && { ...row, event: row.event as WebhookEvent };
    },
  };
}

export type EventLogRepository = ReturnType<typeof createEventLogRepository>;
