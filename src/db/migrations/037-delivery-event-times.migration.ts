import type { Kysely } from 'kysely';
import { alignDeliveryTimes } from '../partition-move.js';

/*
 * Every webhook delivery carries its event's created_at, which the partitioned tables' keys and
 * joins rely on. Deliveries a recovery queued before the tables were partitioned were stamped with
 * the recovery's time; on a database already moved they sit in the legacy partition. One UPDATE of
 * those rows only (a recovery's deliveries, not the outbox's): the scan joins every delivery to its
 * event and locks nothing but the rows it changes. The move runs the same alignment after its swap.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await alignDeliveryTimes(db);
}
