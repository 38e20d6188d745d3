import { sql, type RawBuilder } from 'kysely';
import type { Db } from './database.js';

export interface DueClaim {
  table: string;
  key: string;
  /** When the row is next due; a claim pushes it to the lease end so other claimers leave it. */
  dueColumn: string;
  /** Counts the claims of a row. */
  attemptsColumn: string;
  /** What else makes a row claimable (e.g. its status). */
  pending: RawBuilder<unknown>;
  /** The RETURNING list. */
  returning: RawBuilder<unknown>;
}

/**
 * Claims due rows for this instance, at most `limits[source]` of each ministry system (its free
 * slots), so a slow system's backlog never takes another's share. Each system's due rows are
 * locked FOR UPDATE SKIP LOCKED, so several instances claim disjoint rows, and leased until
 * `leaseUntil`.
 */
export async function claimDueBySource<Row>(
  db: Db,
  claim: DueClaim,
  now: Date,
  leaseUntil: Date,
  limits: Partial<Record<string, number>>,
): Promise<Row[]> {
  const sources = Object.entries(limits).filter((e): e is [string, number] => (e[1] ?? 0) > 0);
  if (sources.length === 0) return [];
  const table = sql.table(claim.table);
  const key = sql.ref(claim.key);
  const due = sql.ref(claim.dueColumn);
  const attempts = sql.ref(claim.attemptsColumn);
  const name = (i: number) => sql.raw(`due_${i}`);
  const ctes = sources.map(
    ([source, limit], i) => sql`${name(i)} AS (
      SELECT ${key} FROM ${table}
      WHERE source = ${source} AND ${claim.pending} AND ${due} <= ${now}::timestamptz
      ORDER BY ${due} LIMIT ${limit} FOR UPDATE SKIP LOCKED)`,
  );
  const ids = sources.map((_, i) => sql`SELECT * FROM ${name(i)}`);
  const { rows } = await sql<Row>`
    WITH ${sql.join(ctes)}
    UPDATE ${table} SET ${due} = ${leaseUntil}::timestamptz, ${attempts} = ${attempts} + 1
    WHERE ${key} IN (${sql.join(ids, sql` UNION ALL `)})
    RETURNING ${claim.returning}`.execute(db);
  return rows;
}
