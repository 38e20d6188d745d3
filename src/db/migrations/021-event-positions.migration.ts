import { sql, type Kysely } from 'kysely';

/*
 * Positions in the events feed. `created_at` is when the writing transaction started, so a
 * transaction that started earlier and committed later slips behind what a poller has already
 * read. A position is given after commit instead, by one assigner at a time (the row lock on
 * `event_positions`), so positions become visible in increasing order. NULL means not yet
 * positioned; writers keep inserting without one. `last` is the highest position ever given:
 * retention deletes events, and positions are never reused.
 *
 * The unique index is partial so that giving a row its position is a "no key" update: it does
 * not wait on a transaction that holds a foreign-key share lock on the event (a delivery being
 * queued for it).
 */
const statements = [
  `ALTER TABLE events ADD COLUMN sequence bigint`,
  `CREATE TABLE event_positions (
    id boolean PRIMARY KEY DEFAULT true CHECK (id),
    last bigint NOT NULL CHECK (last >= 0)
  )`,
  `UPDATE events e SET sequence = o.n
    FROM (SELECT id, row_number() OVER (ORDER BY created_at, id) AS n FROM events) o
    WHERE e.id = o.id`,
  `INSERT INTO event_positions (last) SELECT count(*) FROM events`,
  `CREATE UNIQUE INDEX events_sequence_key ON events (sequence) WHERE sequence IS NOT NULL`,
  `CREATE INDEX events_partner_sequence_idx ON events (partner_id, sequence) WHERE sequence IS NOT NULL`,
  `CREATE INDEX events_unpositioned_idx ON events (created_at, id) WHERE sequence IS NULL`,
];

export async function up(db: Kysely<unknown>): Promise<void> {
  for (const statement of statements) await sql.raw(statement).execute(db);
}
