import type { ColumnType } from 'kysely';
import type { Source } from '../domain/vocabulary.js';

/*
 * The column types of db.types.ts that the schema cannot tell: what a column holds beyond its SQL
 * type, and how the service writes it. scripts/db-types.generator.ts names them per column; the
 * schema still decides whether the column admits null and has a default.
 */

/** Set by the insert (or its default) and never updated. */
export type CreatedAt = ColumnType<Date, Date | string, never>;

/** NUMERIC comes back as a decimal string from both drivers, and goes in as one: an amount never passes through a float. */
export type Decimal = ColumnType<string, string, string>;

/** jsonb, written as JSON text and read back parsed. */
export type JsonColumn<T> = ColumnType<T, string, string>;

/** The stored word for a delivery's status (vocabulary.ts says why it is not the APIs'). */
export type { StoredDeliveryStatus } from '../domain/vocabulary.js';

/** One source's outcome in a reconciliation run (reconciliation_runs.sources). */
export interface SourceOutcome {
  source: Source;
  status: 'completed' | 'failed';
  matched: number;
  autoConfirmed: number;
  discrepancies: number;
  error: string | null;
}
