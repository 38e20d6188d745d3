/** The SQLSTATE of an error PostgreSQL (or PGlite) raised, or undefined for any other error. */
export function pgErrorCode(err: unknown): string | undefined {
  if (typeof err !== 'object' || err === null) return undefined;
  const { code } = err as { code?: unknown };
  return typeof code === 'string' ? code : undefined;
}

/**
 * SQLSTATEs that say the server, not the statement, is the trouble: class 08 (connection
 * exception), 57P01-57P03 (shut down by an operator or a crash, or still starting), 53300 (no
 * connection slot), 25006 (a failover left us on a server that is now read-only) and 57014 (the
 * server's statement_timeout, the same deadline as the service's own, ended the statement), and
 * 25P03 and 57P05 (the server ended a connection that sat idle, in a transaction or out of one).
 */
const UNAVAILABLE_STATES = new Set(['57P01', '57P02', '57P03', '53300', '25006', '57014', '25P03', '57P05']);

/** Socket errors of a connection that could not be made or was lost. */
const SOCKET_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN']);

/**
 * pg's own errors for a lost or never-made connection carry no code, only these messages
 * ("Connection terminated unexpectedly", "timeout exceeded when trying to connect", ...).
 */
const LOST_CONNECTION_MESSAGES = [
  'Connection terminated',
  'timeout exceeded when trying to connect',
  'Client has encountered a connection error and is not queryable',
  'Client was closed and is not queryable',
  'Cannot use a pool after calling end on the pool',
  // The service's own: a query past its deadline, and a connection refused while the database is away.
  'database query deadline passed',
  'database is away',
];

/** The error and a few levels of its `cause`. */
function errorChain(err: unknown): unknown[] {
  const chain: unknown[] = [];
  for (let current = err; chain.length < 4 && current !== undefined && current !== null; current = (current as { cause?: unknown }).cause) chain.push(current);
  return chain;
}

/** True when `err` is an Error whose message begins with one of `messages` (pg's own errors carry no code). */
function saysOneOf(err: unknown, messages: readonly string[]): boolean {
  return err instanceof Error && messages.some((m) => err.message.startsWith(m));
}

function isUnavailableError(err: unknown): boolean {
  const code = pgErrorCode(err);
  if (code !== undefined && (code.startsWith('08') || UNAVAILABLE_STATES.has(code) || SOCKET_CODES.has(code))) return true;
  if (err instanceof AggregateError && err.errors.some(isUnavailableError)) return true;
  return saysOneOf(err, LOST_CONNECTION_MESSAGES);
}

/**
 * True when an error means the database could not be reached or the connection was lost (a
 * restart, a failover, a terminated backend), not that the statement was wrong: the request may
 * succeed once the database is back. Looks through a few levels of `cause`.
 */
export function isDatabaseUnavailable(err: unknown): boolean {
  return errorChain(err).some(isUnavailableError);
}

/**
 * pg's words for a connection that outlived its deadline: waiting for a pooled one, and making a
 * new one (the server accepted the socket, or a silent network held it, and never answered).
 */
const UNRESPONSIVE_MESSAGES = [
  'database query deadline passed',
  'database is away',
  'timeout exceeded when trying to connect',
  'Connection terminated due to connection timeout',
];

/**
 * True when an error says the database stopped answering rather than refused: a query or a new
 * connection outlived its deadline, or the server's own statement_timeout (the same deadline) ended
 * a statement. Asking again soon would only wait out another deadline.
 */
export function isDatabaseUnresponsive(err: unknown): boolean {
  return pgErrorCode(err) === '57014' || saysOneOf(err, UNRESPONSIVE_MESSAGES);
}

/**
 * SQLSTATEs of one connection's end: an operator's `pg_terminate_backend` (57P01, which a shutdown
 * sends too), a crashed backend (57P02), a connection that sat idle past the server's limit (25P03,
 * 57P05), and the connection exceptions other than "could not connect" (08001) and "rejected" (08004).
 */
const CONNECTION_END_STATES = new Set(['57P01', '57P02', '25P03', '57P05']);
const CONNECT_FAILURE_STATES = new Set(['08001', '08004']);

/** Socket errors of an open connection, as opposed to one that could not be made. */
const CONNECTION_END_CODES = new Set(['ECONNRESET', 'EPIPE']);

/**
 * pg's errors for a query on a client already known to be broken. They are never the first news:
 * pg emits an `error` event when it marks the client so, and that event is what tells the outage.
 */
const BROKEN_CLIENT_MESSAGES = ['Client has encountered a connection error and is not queryable', 'Client was closed and is not queryable'];

/** pg's words for an open connection that ended, not for one that could not be made. */
const CONNECTION_END_MESSAGES = ['Connection terminated unexpectedly', ...BROKEN_CLIENT_MESSAGES];

/**
 * True when an unavailable-database error (`isDatabaseUnavailable`) tells only that one open
 * connection ended, which a restart does to all of them but an operator's kill, a server's idle
 * limit or a paused process's return does to one: whether the database is away takes a new
 * connection to tell. A connection that could not be made, or a deadline, says more.
 */
export function isConnectionEnd(err: unknown): boolean {
  return errorChain(err).some((e) => {
    const code = pgErrorCode(e) ?? '';
    if (CONNECTION_END_STATES.has(code) || CONNECTION_END_CODES.has(code)) return true;
    if (code.startsWith('08') && !CONNECT_FAILURE_STATES.has(code)) return true;
    return saysOneOf(e, CONNECTION_END_MESSAGES);
  });
}

/** True for a query refused by a client that pg had already found broken (see BROKEN_CLIENT_MESSAGES). */
export function isBrokenClientError(err: unknown): boolean {
  return errorChain(err).some((e) => saysOneOf(e, BROKEN_CLIENT_MESSAGES));
}

/**
 * True when the database refused a statement for a value it carried, not for the statement or
 * the server: class 22 (data exception: a number past its column, a time out of range, text it
 * cannot hold), 23514 (a check constraint) and 54000 (a value past a limit, such as a key too long
 * for its index entry). The same statement without that value would have gone through.
 */
export function isValueRefused(err: unknown): boolean {
  return errorChain(err).some((e) => {
    const code = pgErrorCode(e) ?? '';
    return code.startsWith('22') || code === '23514' || code === '54000';
  });
}
