import { createHash } from 'node:crypto';
import type { PostgresCursor, PostgresPool, PostgresPoolClient, PostgresQueryResult } from 'kysely';
import type pg from 'pg';
import { pgErrorCode } from './pg-error.js';
import { withDeadline } from '../work/deadline.js';

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
  /** Outages begun so far; connections made before the latest are not handed out again. */
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
 * Kysely's pool interface over a pg pool, sending repeated statements as named prepared ones. Each
 * query has a deadline: past it the query fails, the connection is marked broken (anything else
 * asked of it fails at once, a transaction's ROLLBACK included) and on release the pool destroys
 * it instead of handing it out again, since its server may never answer on it. While the database
 * is away, connections are refused at once rather than waited for.
 */
export function preparedStatementPool(pool: pg.Pool, namer: StatementNamer, opts: DeadlineOptions = {}): PostgresPool {
  // One wrapper per pg client, reused on every checkout: Kysely keeps its connection object per
  // client it is given, so a new wrapper each time would also cost it a new connection per query.
  const wrappers = new WeakMap<pg.PoolClient, PostgresPoolClient>();
  /** The outage count when each connection was made. */
  const madeIn = new WeakMap<pg.PoolClient, number>();
  const { queryTimeoutMs, health } = opts;

  function wrap(client: pg.PoolClient): PostgresPoolClient {
    let broken: Error | null = null;

    function bounded<T>(query: Promise<T>): Promise<T> {
      if (queryTimeoutMs === undefined) return query;
      // Settles later, or never: its outcome no longer matters to anyone.
      query.catch(() => undefined);
      return withDeadline(query, queryTimeoutMs, () => {
        broken = new QueryDeadlineError(queryTimeoutMs);
        throw broken;
      });
    }

    async function run(text: string, values: unknown[]) {
      if (broken) throw broken;
      try {
        return await bounded(prepared(text, values));
      } catch (err) {
        health?.absorb(err);
        throw err;
      }
    }

    async function prepared(text: string, values: unknown[]) {
      const name = namer.nameFor(text);
      if (!name) return client.query({ text, values });
      try {
        return await client.query({ name, text, values });
      } catch (err) {
        // A migration changed a table under a statement this connection prepared (`SELECT *`
        // gained a column, say, during a rolling deploy): PostgreSQL refuses the old statement
        // until it is prepared again. Inside a transaction the error has aborted it, so the
        // DEALLOCATE fails too and the caller sees the error; the next use outside one recovers.
        if (!isStalePreparedStatement(err) || !(await deallocate(client, name))) throw err;
        return client.query({ name: namer.rename(text, name), text, values });
      }
    }
    function query<R>(sql: string, parameters: ReadonlyArray<unknown>): Promise<PostgresQueryResult<R>>;
    function query<R>(cursor: PostgresCursor<R>): PostgresCursor<R>;
    function query<R>(sqlOrCursor: string | PostgresCursor<R>, parameters?: ReadonlyArray<unknown>) {
      if (typeof sqlOrCursor !== 'string') return client.query(sqlOrCursor as unknown as pg.Submittable) as unknown as PostgresCursor<R>;
      return run(sqlOrCursor, parameters ? [...parameters] : []) as unknown as Promise<PostgresQueryResult<R>>;
    }
    return { query, release: () => client.release(broken ?? undefined) };
  }

  return {
    async connect(): Promise<PostgresPoolClient> {
      if (health?.down) {
        health.probe();
        throw new DatabaseAwayError();
      }
      let client: pg.PoolClient;
      try {
        client = await freshConnection(pool, madeIn, health);
      } catch (err) {
        health?.absorb(err);
        throw err;
      }
      let wrapped = wrappers.get(client);
      if (!wrapped) {
        wrapped = wrap(client);
        wrappers.set(client, wrapped);
      }
      return wrapped;
    },
    end: () => pool.end(),
  };
}

/**
 * A free connection from the pool, never one made before the latest outage began. A failover
 * that never closed the old primary's sockets leaves the pool's idle connections open to a server
 * that will not answer: handed out once the database is back, each would hold its request for a
 * whole query deadline and start the outage again. Such a connection is destroyed instead and the
 * pool asked again; it makes new ones once those are gone.
 */
async function freshConnection(pool: pg.Pool, madeIn: WeakMap<pg.PoolClient, number>, health: DatabaseHealth | undefined): Promise<pg.PoolClient> {
  for (;;) {
    const client = await pool.connect();
    const outages = health?.outages ?? 0;
    const made = madeIn.get(client);
    if (made === undefined) madeIn.set(client, outages);
    if (made === undefined || made === outages) return client;
    client.release(new Error('connection made before the database was last found away'));
  }
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
