import { sql, type Kysely } from 'kysely';

/*
 * Partners are told every end of an accepted payment: the events table takes `payment.failed` and
 * `payment.canceled`. An expiry's cancel is recorded before the ministry is asked, as a partner's
 * is (migration 014): a ministry_cancellations row of kind `expiry`, so a cancel finished after a
 * crash is still recorded as the expiry it was. The lists are written out: a migration must mean
 * the same thing for ever.
 */
const statements = [
  `ALTER TABLE events DROP CONSTRAINT events_event_check`,
  `ALTER TABLE events ADD CONSTRAINT events_event_check CHECK (event IN ('payment.submitted', 'payment.confirmed', 'payment.failed', 'payment.canceled', 'webhook.test'))`,
  `ALTER TABLE ministry_cancellations DROP CONSTRAINT ministry_cancellations_kind_check`,
  `ALTER TABLE ministry_cancellations ADD CONSTRAINT ministry_cancellations_kind_check CHECK (kind IN ('owed', 'partner', 'expiry'))`,
];

export async function up(db: Kysely<unknown>): Promise<void> {
  for (const statement of statements) await sql.raw(statement).execute(db);
}
