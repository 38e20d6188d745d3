import { sql, type Transaction } from 'kysely';
import type { Database } from '../db.types.js';

export type PaymentEvent =
  | { event: 'payment.submitted'; data: { id: string; invoiceId: string } }
  | { event: 'payment.confirmed'; data: { id: string; amount: number } };

export interface EventRepositoryOptions {
  now?: () => Date;
  /** Delay of the first delivery attempt (the head of the retry schedule, normally 0). */
  firstAttemptDelayMs?: number;
}

/**
 * Outbox rows: always written in the transaction that changes the payment's state, together with
 * one delivery row per webhook of the partner subscribed to the event, so a crash after commit
 * cannot lose a notification.
 */
export function createEventRepository(opts: EventRepositoryOptions = {}) {
  const now = opts.now ?? (() => new Date());
  return {
    async append(trx: Transaction<Database>, partnerId: string, e: PaymentEvent): Promise<string> {
      const row = await trx
        .insertInto('events')
        .values({ partner_id: partnerId, event: e.event, payload: JSON.stringify(e.data) })
        .returning('id')
        .executeTakeFirstOrThrow();
      const dueAt = new Date(now().getTime() + (opts.firstAttemptDelayMs ?? 0));
      await trx
        .insertInto('webhook_deliveries')
        .columns(['webhook_id', 'event_id', 'status', 'next_attempt_at'])
        .expression((eb) =>
          eb
            .selectFrom('webhooks')
            .select([
              'id',
              sql<string>`${row.id}::uuid`.as('event_id'),
              sql<'pending'>`'pending'`.as('status'),
              sql<Date>`${dueAt}::timestamptz`.as('next_attempt_at'),
            ])
            .where('partner_id', '=', partnerId)
            .where('deleted_at', 'is', null)
            .where(sql<boolean>`events @> ${JSON.stringify([e.event])}::jsonb`),
        )
        .execute();
      return row.id;
    },
  };
}

export type EventRepository = ReturnType<typeof createEventRepository>;
