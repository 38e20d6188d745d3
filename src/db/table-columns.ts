import { sql, type RawBuilder } from 'kysely';

type Missing<Table, C extends readonly PropertyKey[]> = Exclude<keyof Table, C[number]>;

/**
 * Every column of `Table`, named, for the queries that read whole rows. A statement naming its
 * columns keeps its result shape when a migration adds a column, so a prepared statement stays
 * valid under a rolling deploy, where `*` would change under it. The list must name each column
 * of the table type (the compiler names a missing one), so a row read with it is the whole row.
 */
export function tableColumns<Table>() {
  return <const C extends readonly (keyof Table & string)[]>(columns: C & ([Missing<Table, C>] extends [never] ? unknown : { missing: Missing<Table, C> })): C =>
    columns;
}

/** The columns under a table alias, as Kysely's builders take them (`p.id`, ...). */
export function qualified<A extends string, C extends string>(alias: A, columns: readonly C[]): `${A}.${C}`[] {
  return columns.map((c) => `${alias}.${c}` as const);
}

/** The columns as an SQL list for a raw statement, under `alias` when given. */
export function columnList(columns: readonly string[], alias?: string): RawBuilder<unknown> {
  return sql.join(columns.map((c) => sql.ref(alias ? `${alias}.${c}` : c)));
}
