import type { Transaction } from 'kysely';
import type { Database } from './db.types.js';

/**
 * Work a caller adds to a repository's transaction, such as the audit entry of an operator's
 * action: both commit or neither does.
 */
export type AlsoInTransaction<Row> = (trx: Trx, row: Row) => Promise<void>;

export type Trx = Transaction<Database>;
