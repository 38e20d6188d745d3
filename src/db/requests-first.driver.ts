import type { DatabaseConnection, Dialect, Driver, TransactionSettings } from 'kysely';
import type { WorkPriority } from './work-priority.js';

export interface RequestsFirstOptions {
  /** Background work waiting this long takes the next turn anyway: requests first, but never background starved. */
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
 * Background work that has waited `maxBackgroundWaitMs` goes next, so it always progresses.
 * Savepoints are left out, as the embedded driver has none.
 */
export class RequestsFirstDriver implements Driver {
  private busy = false;
  private readonly requests: Waiter[] = [];
  private readonly background: Waiter[] = [];
  private readonly now: () => number;

  constructor(
    private readonly inner: Driver,
    private readonly priority: WorkPriority,
    private readonly opts: RequestsFirstOptions,
  ) {
    this.now = opts.now ?? Date.now;
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

  private nextTurn(): Waiter | undefined {
    const oldest = this.background[0];
    if (oldest && this.now() - oldest.since >= this.opts.maxBackgroundWaitMs) return this.background.shift();
    return this.requests.shift() ?? this.background.shift();
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
