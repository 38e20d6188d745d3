import { sql, type Kysely } from 'kysely';

/*
 * A partner's cancel is recorded before the ministry is asked: a row in ministry_cancellations of
 * kind `partner`, written in the transaction that checks the payment may be canceled. The ministry
 * call and the local move follow; a process that dies between them leaves the row, and the
 * confirmation job finishes it. Rows of kind `owed` are the cancellations the service owes after
 * refusing or expiring a payment the ministry had accepted.
 */
const statements = [
  `ALTER TABLE ministry_cancellations ADD COLUMN kind text NOT NULL DEFAULT 'owed'`,
  `ALTER TABLE ministry_cancellations ADD CONSTRAINT ministry_cancellations_kind_check CHECK (kind IN ('owed', 'partner'))`,
];

export async function up(db: Kysely<unknown>): Promise<void> {
  for (const statement of statements) await sql.raw(statement).execute(db);
}
