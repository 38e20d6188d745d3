import { InvalidRequestError, NotFoundError } from '../domain/errors.js';
import { decodeEventCursor, encodeEventCursor } from '../domain/event-cursor.js';
import type { EventLogRepository, EventRow } from '../db/repositories/event-log.repository.js';
import { CURSOR_VIOLATION } from '../schemas/cursor.schema.js';
import type { EventList, EventListFilter, EventView } from '../schemas/event.schema.js';

const DEFAULT_LIMIT = 20;

function toView(row: EventRow): EventView {
  return { id: row.id, type: row.event, createdAt: row.created_at.toISOString(), sequence: row.sequence, data: row.payload as EventView['data'] };
}

/**
 * A partner's own payment events, whether or not it has a webhook: what happened, and when.
 * Every read first positions the events committed since the last one (see the event-log
 * repository), then reads positioned events only: a poller reading on from the highest position
 * it has seen never misses an event that committed late.
 */
export function createEventService(deps: { events: EventLogRepository }) {
  /** Oldest first after a position: the feed a follower polls. */
  async function listAfter(partnerId: string, query: EventListFilter, afterSequence: number): Promise<EventList> {
    if (query.cursor !== undefined || query.from !== undefined || query.to !== undefined) {
      throw new InvalidRequestError(['afterSequence cannot be combined with cursor, from or to'], '/afterSequence');
    }
    await deps.events.assignPending();
    const rows = await deps.events.listAfter(partnerId, { type: query.type, paymentId: query.paymentId }, afterSequence, query.limit ?? DEFAULT_LIMIT);
    return { items: rows.map(toView), nextCursor: null };
  }

  return {
    async list(partnerId: string, query: EventListFilter): Promise<EventList> {
      if (query.afterSequence !== undefined) return listAfter(partnerId, query, query.afterSequence);
      const before = query.cursor === undefined ? null : decodeEventCursor(partnerId, query.cursor);
      if (before === null && query.cursor !== undefined) throw new InvalidRequestError([CURSOR_VIOLATION], '/cursor');
      const limit = query.limit ?? DEFAULT_LIMIT;
      const filter = {
        type: query.type,
        paymentId: query.paymentId,
        from: query.from === undefined ? undefined : new Date(query.from),
        to: query.to === undefined ? undefined : new Date(query.to),
      };
      await deps.events.assignPending();
      // One row more than the page tells whether another page follows.
      const rows = await deps.events.listNewest(partnerId, filter, before, limit + 1);
      const page = rows.slice(0, limit);
      const last = page.at(-1);
      return { items: page.map(toView), nextCursor: rows.length > limit && last ? encodeEventCursor(partnerId, last.sequence) : null };
    },

    async get(partnerId: string, id: string): Promise<EventView> {
      await deps.events.assignPending();
      const row = await deps.events.get(partnerId, id);
      if (!row) throw new NotFoundError('Event');
      return toView(row);
    },
  };
}

export type EventService = ReturnType<typeof createEventService>;
