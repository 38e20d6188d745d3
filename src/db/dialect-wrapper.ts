import type { Dialect, Driver } from 'kysely';

/** `dialect` with each driver it creates wrapped by `wrap`; everything else is the dialect's own. */
export function withDriver(dialect: Dialect, wrap: (driver: Driver) => Driver): Dialect {
  return {
    createAdapter: () => dialect.createAdapter(),
    createDriver: () => wrap(dialect.createDriver()),
    createQueryCompiler: () => dialect.createQueryCompiler(),
    createIntrospector: (db) => dialect.createIntrospector(db),
  };
}
