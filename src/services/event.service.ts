import { NotFoundError } from '../domain/errors.js';
import type { EventLogRepository, EventRow } from '../db/repositories/event-log.repository.js';
import type { EventList, EventListFilter, EventView } from '../schemas/event.schema.js';

const DEFAULT_LIMIT = 20;

function toView(row: EventRow): EventView {
  return { id: row.id, type: row.event, createdAt: row.created_at.toISOString(), data: row.payload as EventView['data'] };
}

/** A partner's own payment events, whether or not it has a webhook: what happened, and when. */
export function createEventService(deps: { events: EventLogRepository }) {
  return {
    async list(partnerId: string, query: EventListFilter): Promise<EventList> {
      const limit = query.limit ?? DEFAULT_LIMIT;
      const filter = {
        type: query.type,
        paymentId: query.paymentId,
        from: query.from === undefined ? undefined : new Date(query.from),
        to: query.to === undefined ? undefined : new Date(query.to),
      };
      // One row more than the page tells whether another page follows.
      const rows = await deps.events.list(partnerId, filter, query.cursor ?? null, limit + 1);
      const items = rows.slice(0, limit).map(toView);
      return { items, nextCursor: rows.length > limit ? (items.at(-1)?.id ?? null) : null };
    },

    async get(partnerId: string, id: string): Promise<EventView> {
      const row = await deps.events.get(partnerId, id);
      if (!row) throw new NotFoundError('Event');
      return toView(row);
    },
  };
}

export type EventService = ReturnType<typeof createEventService>;
