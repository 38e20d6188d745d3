import type { DatabaseConnection, Dialect, Driver, TransactionSettings } from 'kysely';
import { withDriver } from './requests-first.driver.js';
import type { WorkPriority } from './work-priority.js';

export interface RequestsFirstPoolOptions {
  /** The pool's size: background work never queues inside the pool, where a request would wait behind it. */
  connections: number;
  /** Connections background work may hold while a request is being served; the rest are the requests'. */
  backgroundConnections: number;
  /** Background work that has had no connection this long takes the next one anyway: requests first, but never background starved. */
  maxBackgroundWaitMs: number;
  now?: () => number;
}

/**
 * A driver over a pool of connections (PostgreSQL) that serves requests first. Requests go
 * straight to the pool, never through a queue of ours, so nothing here can hold one back (a
 * database that stopped answering still refuses them at once). Background work is what waits,
 * here rather than in the pool's own queue, where a request arriving later would wait behind all
 * of it: it takes a connection only when one is free, and while a request is in flight it holds
 * at most `backgroundConnections` of the pool, so a confirmation pass of a hundred checks leaves a
 * request the connections it needs. Background work that has had no turn for
 * `maxBackgroundWaitMs` goes anyway, so it always progresses.
 */
export class RequestsFirstPoolDriver implements Driver {
  private readonly waiting: (() => void)[] = [];
  private readonly backgroundHeld = new WeakSet<DatabaseConnection>();
  private readonly requestHeld = new WeakSet<DatabaseConnection>();
  private readonly now: () => number;
  private backgroundInUse = 0;
  private requestsWaiting = 0;
  private requestsHolding = 0;
  private lastBackgroundTurn: number;
  private overdueTimer: NodeJS.Timeout | null = null;
  private watchingIdle = false;
  readonly savepoint: Driver['savepoint'];
  readonly rollbackToSavepoint: Driver['rollbackToSavepoint'];
  readonly releaseSavepoint: Driver['releaseSavepoint'];

  constructor(
    private readonly inner: Driver,
    private readonly priority: WorkPriority,
    private readonly opts: RequestsFirstPoolOptions,
  ) {
    this.now = opts.now ?? Date.now;
    this.lastBackgroundTurn = this.now();
    this.savepoint = inner.savepoint?.bind(inner);
    this.rollbackToSavepoint = inner.rollbackToSavepoint?.bind(inner);
    this.releaseSavepoint = inner.releaseSavepoint?.bind(inner);
  }

  init(): Promise<void> {
    return this.inner.init();
  }

  async acquireConnection(): Promise<DatabaseConnection> {
    if (!this.priority.isBackground()) return this.acquireForRequest();
    if (this.waiting.length > 0 || !this.backgroundMayGo()) {
      // Whoever wakes a waiter counts it in first, so nobody slips in between.
      await new Promise<void>((wake) => {
        this.waiting.push(wake);
        this.watch();
      });
    } else {
      this.backgroundInUse++;
    }
    this.lastBackgroundTurn = this.now();
    try {
      const connection = await this.inner.acquireConnection();
      this.backgroundHeld.add(connection);
      return connection;
    } catch (err) {
      this.backgroundDone();
      throw err;
    }
  }

  async releaseConnection(connection: DatabaseConnection): Promise<void> {
    const wasBackground = this.backgroundHeld.delete(connection);
    if (this.requestHeld.delete(connection)) this.requestsHolding--;
    try {
      await this.inner.releaseConnection(connection);
    } finally {
      if (wasBackground) this.backgroundDone();
      else this.handOver();
    }
  }

  private async acquireForRequest(): Promise<DatabaseConnection> {
    this.requestsWaiting++;
    try {
      const connection = await this.inner.acquireConnection();
      this.requestHeld.add(connection);
      this.requestsHolding++;
      return connection;
    } finally {
      this.requestsWaiting--;
      this.handOver();
    }
  }

  private backgroundDone(): void {
    this.backgroundInUse--;
    this.handOver();
  }

  private backgroundOverdue(): boolean {
    return this.now() - this.lastBackgroundTurn >= this.opts.maxBackgroundWaitMs;
  }

  private backgroundMayGo(): boolean {
    if (this.backgroundOverdue()) return true;
    const free = this.opts.connections - this.backgroundInUse - this.requestsHolding - this.requestsWaiting;
    if (free <= 0) return false;
    return this.priority.requestsInFlight() === 0 || this.backgroundInUse < this.opts.backgroundConnections;
  }

  /** Wakes the waiting background work the requests leave room for; one overdue waiter goes regardless. */
  private handOver(): void {
    while (this.waiting.length > 0 && this.backgroundMayGo()) {
      this.backgroundInUse++;
      this.lastBackgroundTurn = this.now();
      this.waiting.shift()?.();
    }
    if (this.waiting.length > 0) this.watch();
  }

  /**
   * Waiting background work is looked at again when a connection is given back, once no request
   * is in flight, and once it is overdue a turn.
   */
  private watch(): void {
    if (!this.watchingIdle && this.priority.requestsInFlight() > 0) {
      this.watchingIdle = true;
      this.priority.whenIdle(() => {
        this.watchingIdle = false;
        this.handOver();
      });
    }
    if (this.overdueTimer) return;
    const left = Math.max(0, this.opts.maxBackgroundWaitMs - (this.now() - this.lastBackgroundTurn));
    this.overdueTimer = setTimeout(() => {
      this.overdueTimer = null;
      this.handOver();
    }, left);
    this.overdueTimer.unref();
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
    if (this.overdueTimer) clearTimeout(this.overdueTimer);
    return this.inner.destroy();
  }
}

/** `dialect` with its pool's driver serving requests first (see RequestsFirstPoolDriver). */
export function requestsFirstPool(dialect: Dialect, priority: WorkPriority, opts: RequestsFirstPoolOptions): Dialect {
  return withDriver(dialect, (driver) => new RequestsFirstPoolDriver(driver, priority, opts));
}
