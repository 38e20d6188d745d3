import type { DatabaseConnection, Dialect, Driver, TransactionSettings } from 'kysely';
import type { WorkPriority } from './work-priority.js';

export interface RequestsFirstOptions {
  /** Background work that has had no turn this long takes the next one anyway: requests first, but never background starved. */
  maxBackgroundWaitMs: number;
  now?: () => number;
}

interface Waiter {
  wake: () => void;
  since: number;
}

/**
 * A driver over one connection (embedded PGlite) that hands the connection to a waiting request
 * before any waiting background work: on one connection every job query queues beside the
 * requests, and a partner's payment should not wait behind a batch of confirmation checks.
 * Background work that has had no turn for `maxBackgroundWaitMs` goes next, once, so it always
 * progresses.
 * Savepoints are left out, as the embedded driver has none.
 */
export class RequestsFirstDriver implements Driver {
  private busy = false;
  private readonly requests: Waiter[] = [];
  private readonly background: Waiter[] = [];
  private readonly now: () => number;
  /** When background work last had the connection: it is due a turn once per `maxBackgroundWaitMs`. */
  private lastBackgroundTurn: number;

  constructor(
    private readonly inner: Driver,
    private readonly priority: WorkPriority,
    private readonly opts: RequestsFirstOptions,
  ) {
    this.now = opts.now ?? Date.now;
    this.lastBackgroundTurn = this.now();
  }

  init(): Promise<void> {
    return this.inner.init();
  }

  async acquireConnection(): Promise<DatabaseConnection> {
    if (this.busy) {
      const queue = this.priority.isBackground() ? this.background : this.requests;
      // The releaser hands the turn over with `busy` still set, so nobody slips in between.
      await new Promise<void>((wake) => queue.push({ wake, since: this.now() }));
    }
    this.busy = true;
    return this.inner.acquireConnection();
  }

  async releaseConnection(connection: DatabaseConnection): Promise<void> {
    await this.inner.releaseConnection(connection);
    const next = this.nextTurn();
    if (next) next.wake();
    else this.busy = false;
  }

  /**
   * A waiting request, unless background work has had no turn for `maxBackgroundWaitMs`: then one
   * background turn, and requests again. Under steady requests background work still gets a turn
   * per interval, and its backlog never takes a run of turns from the requests.
   */
  private nextTurn(): Waiter | undefined {
    const now = this.now();
    const backgroundDue = this.background.length > 0 && now - this.lastBackgroundTurn >= this.opts.maxBackgroundWaitMs;
    if (!backgroundDue && this.requests.length > 0) return this.requests.shift();
    const next = this.background.shift();
    if (!next) return this.requests.shift();
    this.lastBackgroundTurn = now;
    return next;
  }

  beginTransaction(connection: DatabaseConnection, settings: TransactionSettings): Promise<void> {
    return this.inner.beginTransaction(connection, settings);
  }

  commitTransaction(connection: DatabaseConnection): Promise<void> {
    return this.inner.commitTransaction(connection);
  }

  rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    return this.inner.rollbackTransaction(connection);
  }

  destroy(): Promise<void> {
    return this.inner.destroy();
  }
}

/** `dialect` with its driver serving requests first (see RequestsFirstDriver). */
export function requestsFirst(dialect: Dialect, priority: WorkPriority, opts: RequestsFirstOptions): Dialect {
  return {
    createAdapter: () => dialect.createAdapter(),
    createDriver: () => new RequestsFirstDriver(dialect.createDriver(), priority, opts),
    createQueryCompiler: () => dialect.createQueryCompiler(),
    createIntrospector: (db) => dialect.createIntrospector(db),
  };
}
