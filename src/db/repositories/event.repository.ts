import type { Transaction } from 'kysely';
import type { Database } from '../db.types.js';

export type PaymentEvent =
  | { event: 'payment.submitted'; data: { id: string; invoiceId: string } }
  | { event: 'payment.confirmed'; data: { id: string; amount: number } };

/** Outbox rows: always written in the transaction that changes the payment's state. */
export function createEventRepository() {
  return {
    async append(trx: Transaction<Database>, partnerId: string, e: PaymentEvent): Promise<string> {
      const row = await trx
        .insertInto('events')
        .values({ partner_id: partnerId, event: e.event, payload: JSON.stringify(e.data) })
        .returning('id')
        .executeTakeFirstOrThrow();
      return row.id;
    },
  };
}

export type EventRepository = ReturnType<typeof createEventRepository>;
