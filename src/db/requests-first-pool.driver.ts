import type { DatabaseConnection, Dialect, Driver } from 'kysely';
import { withDriver } from './dialect-wrapper.js';
import { BackgroundTurnsDriver, type BackgroundTurnsOptions } from './background-turns.driver.js';
import type { WorkPriority } from './work-priority.js';

export interface RequestsFirstPoolOptions extends BackgroundTurnsOptions {
  /** The pool's size: background work never queues inside the pool, where a request would wait behind it. */
  connections: number;
  /** Connections background work may hold while a request is being served; the rest are the requests'. */
  backgroundConnections: number;
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
export class RequestsFirstPoolDriver extends BackgroundTurnsDriver {
  private readonly waiting: (() => void)[] = [];
  private readonly backgroundHeld = new WeakSet<DatabaseConnection>();
  private readonly requestHeld = new WeakSet<DatabaseConnection>();
  private backgroundInUse = 0;
  private requestsWaiting = 0;
  private requestsHolding = 0;
  readonly savepoint: Driver['savepoint'];
  readonly rollbackToSavepoint: Driver['rollbackToSavepoint'];
  readonly releaseSavepoint: Driver['releaseSavepoint'];

  constructor(
    inner: Driver,
    priority: WorkPriority,
    protected override readonly opts: RequestsFirstPoolOptions,
  ) {
    super(inner, priority, opts);
    this.savepoint = inner.savepoint?.bind(inner);
    this.rollbackToSavepoint = inner.rollbackToSavepoint?.bind(inner);
    this.releaseSavepoint = inner.releaseSavepoint?.bind(inner);
  }

  // Not async itself: every query passes here, and an async function returning another's promise
  // costs promises of its own (prepared-statement.pool.ts says why that counts).
  acquireConnection(): Promise<DatabaseConnection> {
    return this.priority.isBackground() ? this.acquireForBackground() : this.acquireForRequest();
  }

  private async acquireForBackground(): Promise<DatabaseConnection> {
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

  private backgroundMayGo(): boolean {
    if (this.backgroundOverdue()) return true;
    const free = this.opts.connections - this.backgroundInUse - this.requestsHolding - this.requestsWaiting;
    if (free <= 0) return false;
    return this.priority.requestsInFlight() === 0 || this.backgroundInUse < this.opts.backgroundConnections;
  }

  /** Wakes the waiting background work the requests leave room for; one overdue waiter goes regardless. */
  protected handOver(): void {
    while (this.waiting.length > 0 && this.backgroundMayGo()) {
      this.backgroundInUse++;
      this.lastBackgroundTurn = this.now();
      this.waiting.shift()?.();
    }
    if (this.waiting.length > 0) this.watch();
  }
}

/** `dialect` with its pool's driver serving requests first (see RequestsFirstPoolDriver). */
export function requestsFirstPool(dialect: Dialect, priority: WorkPriority, opts: RequestsFirstPoolOptions): Dialect {
  return withDriver(dialect, (driver) => new RequestsFirstPoolDriver(driver, priority, opts));
}
