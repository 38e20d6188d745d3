/** `finance_day` as `financeDay`, at the type level. */
type CamelCase<S extends string> = S extends `${infer Head}_${infer Tail}` ? `${Head}${Capitalize<CamelCase<Tail>>}` : S;

/** A row's fields under their camelCase names, their values as they are. */
export type CamelRow<R> = { [K in keyof R & string as CamelCase<K>]: R[K] };

/** A value as JSON shows it: a time as its ISO string. */
type Iso<V> = V extends Date ? string : V;
export type IsoDates<T> = { [K in keyof T]: Iso<T[K]> };

const camelCase = (name: string): string => name.replace(/_([a-z0-9])/g, (_, letter: string) => letter.toUpperCase());

/**
 * The mapper of one row type: copies `fields` of a row under their camelCase names, and nothing
 * else, so a row read with more columns (a join) maps the same. The names are worked out once,
 * here, not per row; every snake_case column becomes a camelCase field through this.
 */
export function camelRow<const K extends string>(fields: readonly K[]) {
  const names = fields.map((field) => [field, camelCase(field)] as const);
  return <R extends Record<K, unknown>>(row: R): CamelRow<Pick<R, K>> => {
    const out: Record<string, unknown> = {};
    for (const [field, name] of names) out[name] = row[field];
    return out as CamelRow<Pick<R, K>>;
  };
}

/** The same fields with every time as its ISO string, as the API's JSON shows them. */
export function isoDates<T extends object>(mapped: T): IsoDates<T> {
  const out: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(mapped)) out[name] = value instanceof Date ? value.toISOString() : value;
  return out as IsoDates<T>;
}
