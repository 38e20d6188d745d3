import type { CompiledQuery, DatabaseConnection, Dialect, QueryResult } from 'kysely';
import type { Tracer } from '../domain/tracer.port.js';
import { withDriver } from './dialect-wrapper.js';

const OPERATION = /^\s*([A-Za-z]+)/;

/** A statement's span: named by its first keyword, with its text (placeholders, never the values bound to them). */
function spanOf(query: CompiledQuery) {
  const operation = (OPERATION.exec(query.sql)?.[1] ?? 'query').toUpperCase();
  return { name: operation, attributes: { 'db.system.name': 'postgresql', 'db.operation.name': operation, 'db.query.text': query.sql } };
}

function traceConnection(connection: DatabaseConnection, tracer: Tracer): void {
  const execute = connection.executeQuery.bind(connection);
  connection.executeQuery = <R>(query: CompiledQuery): Promise<QueryResult<R>> => {
    // Outside a trace (a pass claiming work) a statement would start a trace of its own for nothing.
    if (tracer.active() === null) return execute<R>(query);
    const { name, attributes } = spanOf(query);
    return tracer.span(name, { kind: 'client', attributes }, () => execute<R>(query));
  };
}

/**
 * The embedded database's statements as spans, where the pg instrumentation (which sees only
 * the pg driver) records PostgreSQL's. Each connection is wrapped once, when first handed out.
 */
export function tracedDialect(dialect: Dialect, tracer: Tracer): Dialect {
  const traced = new WeakSet<DatabaseConnection>();
  return withDriver(dialect, (driver) => {
    const acquire = driver.acquireConnection.bind(driver);
    driver.acquireConnection = async () => {
      const connection = await acquire();
      if (!traced.has(connection)) {
        traceConnection(connection, tracer);
        traced.add(connection);
      }
      return connection;
    };
    return driver;
  });
}
