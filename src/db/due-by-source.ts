import { sql, type RawBuilder } from 'kysely';

/**
 * The CTEs that lock each ministry system's due rows (at most its free slots, FOR UPDATE SKIP
 * LOCKED) and the union of their ids, for a claim that must never let one system's backlog take
 * another's share. `due` selects one system's due ids (a single column), given its limit. Null
 * when no system has a free slot.
 */
export function dueBySource(
  limits: Partial<Record<string, number>>,
  due: (source: string, limit: number) => RawBuilder<unknown>,
): { ctes: RawBuilder<unknown>; ids: RawBuilder<unknown> } | null {
  const sources = Object.entries(limits).filter((e): e is [string, number] => (e[1] ?? 0) > 0);
  if (sources.length === 0) return null;
  const name = (i: number) => sql.raw(`due_${i}`);
  return {
    ctes: sql.join(sources.map(([source, limit], i) => sql`${name(i)} AS (${due(source, limit)})`)),
    ids: sql.join(sources.map((_, i) => sql`SELECT * FROM ${name(i)}`), sql` UNION ALL `),
  };
}
