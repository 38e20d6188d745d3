import type { Compilable, CompiledQuery } from 'kysely';

/** Stands in for a value bound at each execution; Kysely passes it through as a plain parameter. */
class Slot {
  constructor(readonly name: string) {}
}

type Bind<K extends string> = (values: Readonly<Record<K, unknown>>) => unknown;

/** Gives the placeholder for a named value; annotating the builder's parameter names the values. */
export type SlotFn<K extends string> = <T>(name: K) => T;

/**
 * Builds and compiles a query once, then binds new values on each call. Kysely rebuilds and
 * recompiles the same SQL text on every execution; on `GET /payments/{id}` that was about 7% of
 * the service's CPU (`npm run bench -- --cpu-prof`). Run the result with `db.executeQuery()` (a
 * transaction's too). The compiled query skips Kysely plugins, and none are installed.
 */
export function compileOnce<K extends string, R>(
  build: (slot: SlotFn<K>) => Compilable<R>,
): (values: Readonly<Record<K, unknown>>) => CompiledQuery<R> {
  const compiled = build(<T>(name: K) => new Slot(name) as T).compile();
  const binds: Bind<K>[] = compiled.parameters.map((p) => (p instanceof Slot ? (values) => values[p.name as K] : () => p));
  return (values) => ({ ...compiled, parameters: binds.map((bind) => bind(values)) });
}
