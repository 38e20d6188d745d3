import { createHash } from 'node:crypto';
import type { PostgresCursor, PostgresPool, PostgresPoolClient, PostgresQueryResult } from 'kysely';
import type pg from 'pg';
import { pgErrorCode } from './pg-error.js';
import { createDeadlineSweep, type DeadlineSweep } from '../primitives/deadline.helper.js';

export interface PreparedStatementOptions {
  /** Executions of a statement text before it is prepared; one-off statements stay unnamed. */
  preparedAfter?: number;
  /**
   * Most distinct statement texts ever prepared. Every connection keeps each one it has run (memory
   * in its PostgreSQL backend), and texts that differ only by list length (`IN ($1, $2, ...)`) are
   * distinct, so the set is capped; texts past the cap run unnamed, as before.
   */
  maxStatements?: number;
}

const PREPARABLE = /^\s*(select|insert|update|delete|with)\b/i;

/**
 * Decides which statement texts run as named prepared statements. PostgreSQL then parses each one
 * once per connection and, after a few executions, plans it once too; measured under the payment
 * benchmark, planning was two thirds of a payment status read's time in PostgreSQL and half of a
 * payment's.
 */
export function createStatementNamer(opts: PreparedStatementOptions = {}) {
  const preparedAfter = opts.preparedAfter ?? 2;
  const maxStatements = opts.maxStatements ?? 500;
  const names = new Map<string, string>();
  const counts = new Map<string, number>();
  let renames = 0;
  return {
    nameFor(text: string): string | undefined {
      const known = names.get(text);
      if (known !== undefined || names.size >= maxStatements || !PREPARABLE.test(text)) return known;
      const seen = (counts.get(text) ?? 0) + 1;
      if (seen < preparedAfter) {
        // Bounded like the names: one-off texts (DDL, ad hoc lists) must not pile up here either.
        if (counts.size >= maxStatements * 4) counts.clear();
        counts.set(text, seen);
        return undefined;
      }
      counts.delete(text);
      const name = `gpc_${createHash('sha256').update(text).digest('hex').slice(0, 24)}`;
      names.set(text, name);
      return name;
    },

    /**
     * A new name for `text`, whose statement PostgreSQL refused as `stale`. pg sends Parse only for
     * a name it has not yet prepared on the connection, and has no public way to forget one, so the
     * text is prepared again under a name no connection has used. When another connection has
     * already renamed it, that name is the answer.
     */
    rename(text: string, stale: string): string {
      const current = names.get(text);
      if (current !== undefined && current !== stale) return current;
      renames += 1;
      const name = `${stale.replace(/_r\d+$/, '')}_r${renames}`;
      names.set(text, name);
      return name;
    },
  };
}

export type StatementNamer = ReturnType<typeof createStatementNamer>;

/** What the pool tells of the database's health, and asks before handing out a connection (the process's DatabaseOutage). */
export interface DatabaseHealth {
  readonly down: boolean;
  /**
   * The database stopped answering (a query or a new connection outlived its deadline), rather
   * than refusing or closing connections: asking it again would only wait out another deadline.
   */
  readonly unresponsive: boolean;
  /** How many outages have begun. */
  readonly outages: number;
  /** True when `err` says the database is away; the outage begins. */
  absorb(err: unknown): boolean;
  /** While away: one probe at a time asks whether it is back. */
  probe(): void;
}

export interface DeadlineOptions {
  /** A query not answered within this fails and its connection is destroyed. */
  queryTimeoutMs?: number;
  health?: DatabaseHealth;
}



/** A query outlived its deadline: the server, or the network to it, stopped answering. */
export class QueryDeadlineError extends Error {
  constructor(ms: number) {
    super(`database query deadline passed: no answer within ${ms} ms`);
    this.name = 'QueryDeadlineError';
  }
}

/** Refused without trying: the process knows the database is away, and a probe is looking for it. */
export class DatabaseAwayError extends Error {
  constructor() {
    super('database is away: refused at once while a probe looks for it');
    this.name = 'DatabaseAwayError';
  }
}

/**
 * Tells the health of a failed query or checkout. Once the database is known to have stopped
 * answering, every other query in flight is given up: each was sent to the same silent server, and
 * a request waiting on one of them (or on a lookup it shares with other requests) would otherwise
 * wait out a deadline of its own after the process knows.
 */
function noteFailure(err: unknown, health: DatabaseHealth | undefined, deadlines: DeadlineSweep | null): void {
  if (!health?.absorb(err) || !health.unresponsive) return;
  deadlines?.giveUpAll(new DatabaseAwayError());
}

/** What every connection of a pool shares: the database's health and the deadline its queries are held to. */
interface PoolWatch {
  health?: DatabaseHealth;
  deadlines: DeadlineSweep | null;
  queryTimeoutMs: number;
}

/** One pg client as Kysely's connection: its queries named when repeated, each within the deadline. */
function wrapClient(client: pg.PoolClient, namer: StatementNamer, watch: PoolWatch): PostgresPoolClient {
  const { health, deadlines } = watch;
  let broken: Error | null = null;

  // Every query of the service passes here: written with plain promise chains rather than async
  // functions, each layer of which costs promises of its own, and on Node 20 every promise runs
  // the async context's hooks (bench/README.md, "Readings of 2026-11-29, later").
  function run(text: string, values: unknown[]): Promise<pg.QueryResult> {
    if (broken) return Promise.reject(broken);
    // A query given up at its deadline settles later, or never: its outcome no longer matters to
    // anyone, and the sweep's own handlers keep its rejection from going unhandled.
    const query = prepared(text, values);
    const answer = deadlines ? deadlines.bound(query, () => new QueryDeadlineError(watch.queryTimeoutMs)) : query;
    return answer.then(
      (result) => {
        // Answered while the process thinks it away: a probe confirms it (one at a time, not every query).
        if (health?.down) health.probe();
        return result;
      },
      (err: unknown) => {
        // Past its deadline or given up with the rest, the connection may never answer again.
        if (err instanceof QueryDeadlineError || err instanceof DatabaseAwayError) broken = err;
        noteFailure(err, health, deadlines);
        throw err;
      },
    );
  }

  function prepared(text: string, values: unknown[]): Promise<pg.QueryResult> {
    const name = namer.nameFor(text);
    if (!name) return client.query({ text, values });
    return client.query({ name, text, values }).catch(async (err: unknown) => {
      // A migration changed a table under a statement this connection prepared (`SELECT *`
      // gained a column, say, during a rolling deploy): PostgreSQL refuses the old statement
      // until it is prepared again. Inside a transaction the error has aborted it, so the
      // DEALLOCATE fails too and the caller sees the error; the next use outside one recovers.
      if (!isStalePreparedStatement(err) || !(await deallocate(client, name))) throw err;
      return client.query({ name: namer.rename(text, name), text, values });
    });
  }
  function query<R>(sql: string, parameters: ReadonlyArray<unknown>): Promise<PostgresQueryResult<R>>;
  function query<R>(cursor: PostgresCursor<R>): PostgresCursor<R>;
  function query<R>(sqlOrCursor: string | PostgresCursor<R>, parameters?: ReadonlyArray<unknown>) {
    if (typeof sqlOrCursor !== 'string') return client.query(sqlOrCursor as unknown as pg.Submittable) as unknown as PostgresCursor<R>;
    return run(sqlOrCursor, parameters ? [...parameters] : []) as unknown as Promise<PostgresQueryResult<R>>;
  }
  return { query, release: () => client.release(broken ?? undefined) };
}

/**
 * Kysely's pool interface over a pg pool, sending repeated statements as named prepared ones. Each
 * query has a deadline: past it the query fails, the connection is marked broken (anything else
 * asked of it fails at once, a transaction's ROLLBACK included) and on release the pool destroys
 * it instead of handing it out again, since its server may never answer on it. While the database
 * does not answer (a deadline passed), connections are refused at once rather than waited for.
 */
export function preparedStatementPool(pool: pg.Pool, namer: StatementNamer, opts: DeadlineOptions = {}): PostgresPool {
  // One wrapper per pg client, reused on every checkout: Kysely keeps its connection object per
  // client it is given, so a new wrapper each time would also cost it a new connection per query.
  const wrappers = new WeakMap<pg.PoolClient, PostgresPoolClient>();
  const { health } = opts;
  const watch: PoolWatch = { health, deadlines: opts.queryTimeoutMs === undefined ? null : createDeadlineSweep(opts.queryTimeoutMs), queryTimeoutMs: opts.queryTimeoutMs ?? 0 };
  // The outage count when each connection was made. A failover that never closed the old
  // primary's sockets leaves idle connections that look fine and will never answer: once an
  // outage has begun, no connection made before it is handed out again.
  const madeIn = new WeakMap<pg.PoolClient, number>();
  if (health) pool.on('connect', (client) => madeIn.set(client as pg.PoolClient, health.outages));

  function checkout(): Promise<pg.PoolClient> {
    return pool.connect().then((client) => {
      if ((madeIn.get(client) ?? 0) === (health?.outages ?? 0)) return client;
      client.release(new Error('made before the latest database outage'));
      return checkout();
    });
  }

  function wrap(client: pg.PoolClient): PostgresPoolClient {
    let wrapped = wrappers.get(client);
    if (!wrapped) {
      wrapped = wrapClient(client, namer, watch);
      wrappers.set(client, wrapped);
    }
    return wrapped;
  }

  return {
    connect(): Promise<PostgresPoolClient> {
      if (health?.unresponsive) {
        health.probe();
        return Promise.reject(new DatabaseAwayError());
      }
      // A checkout waiting for a connection is given up with the queries, as it waits on them.
      const pending = checkout();
      const waited = watch.deadlines ? watch.deadlines.bound(pending, () => new Error('timeout exceeded when trying to connect')) : pending;
      return waited.then(wrap, (err: unknown) => {
        // Given up while waiting: a connection it gets later goes straight back to the pool.
        if (waited !== pending) pending.then((client) => client.release(), () => undefined);
        noteFailure(err, health, watch.deadlines);
        throw err;
      });
    },
    end: () => {
      watch.deadlines?.stop();
      return pool.end();
    },
  };
}

/** PostgreSQL's refusal to run a prepared statement whose result columns changed since it was prepared. */
function isStalePreparedStatement(err: unknown): boolean {
  return pgErrorCode(err) === '0A000' && err instanceof Error && err.message.includes('cached plan must not change result type');
}

/**
 * Drops a stale prepared statement from the connection's backend; false when it cannot run (the
 * error aborted the transaction). pg still counts the name as prepared, so it is not sent again.
 */
async function deallocate(client: pg.PoolClient, name: string): Promise<boolean> {
  try {
    await client.query(`DEALLOCATE ${name}`);
  } catch {
    return false;
  }
  return true;
}
