/**
 * Database errors carry the statement and its bound values (PGlite adds `query` and `params`;
 * PostgreSQL's `detail` and `where` can quote row values), and values are partner and payer data.
 * Only what identifies the failure is kept for the logs.
 */
const KEPT_DB_FIELDS = ['code', 'severity', 'routine', 'file', 'line', 'position', 'schema', 'table', 'column', 'dataType', 'constraint'] as const;
const SQL_FIELDS = ['query', 'params', 'parameters', 'internalQuery'] as const;

type ErrorRecord = Error & Record<string, unknown>;

function isDatabaseError(err: ErrorRecord): boolean {
  if (SQL_FIELDS.some((field) => field in err)) return true;
  return typeof err.severity === 'string' && typeof err.code === 'string' && typeof err.routine === 'string';
}

// "invalid input syntax for type uuid: "…"" and the like end with the offending value.
const scrubMessage = (message: string) => message.replace(/: ".*"$/s, ': [redacted]');

/** The error, or a copy of it (same prototype, so loggers name its type) without SQL or values. */
export function redactDbError(value: unknown, depth = 0): unknown {
  if (!(value instanceof Error) || depth > 8) return value;
  const err = value as ErrorRecord;
  const cause = err.cause === undefined ? undefined : redactDbError(err.cause, depth + 1);
  if (!isDatabaseError(err)) {
    if (cause === err.cause) return err;
    const copy = Object.assign(Object.create(Object.getPrototypeOf(err) as object) as ErrorRecord, err);
    Object.defineProperties(copy, {
      message: { value: err.message, writable: true, configurable: true },
      stack: { value: err.stack, writable: true, configurable: true },
      cause: { value: cause, writable: true, configurable: true },
    });
    return copy;
  }
  const copy = Object.create(Object.getPrototypeOf(err) as object) as ErrorRecord;
  const message = scrubMessage(err.message);
  Object.defineProperties(copy, {
    name: { value: err.name, writable: true, configurable: true },
    message: { value: message, writable: true, configurable: true },
    stack: { value: err.stack?.replace(err.message, message), writable: true, configurable: true },
  });
  for (const field of KEPT_DB_FIELDS) if (err[field] !== undefined) copy[field] = err[field];
  if (cause !== undefined) Object.defineProperty(copy, 'cause', { value: cause, writable: true, configurable: true });
  return copy;
}
