import type { Kysely, Transaction } from 'kysely';
import type { Database } from './db.types.js';

declare const unitOfWorkBrand: unique symbol;

/**
 * A transaction as services see it: a handle they pass from one repository call to the next so
 * the calls commit together, with no query API of its own. Only `src/db` opens it (`trxOf`), so
 * SQL stays in repositories and services never name Kysely's types.
 */
export interface UnitOfWork {
  readonly [unitOfWorkBrand]: true;
}

/** Kysely's transaction, for repositories only. */
export type Trx = Transaction<Database>;

export const asUnitOfWork = (trx: Trx): UnitOfWork => trx as unknown as UnitOfWork;

/** The repository's side of a unit of work. */
export const trxOf = (work: UnitOfWork): Trx => work as unknown as Trx;

/** Where a repository call runs: in the caller's unit of work when it gives one, else on its own. */
export const executorOf = (db: Kysely<Database>, work: UnitOfWork | undefined): Kysely<Database> => (work ? trxOf(work) : db);

/** Runs `work` in one transaction: everything it hands the unit of work to commits together or not at all. */
export type InUnitOfWork = <T>(work: (uow: UnitOfWork) => Promise<T>) => Promise<T>;

export function unitOfWorkRunner(db: Kysely<Database>): InUnitOfWork {
  return (work) => db.transaction().execute((trx) => work(asUnitOfWork(trx)));
}

/**
 * Work a caller adds to a repository's transaction, such as the audit entry of an operator's
 * action: both commit or neither does.
 */
export type AlsoInTransaction<Row> = (uow: UnitOfWork, row: Row) => Promise<void>;
