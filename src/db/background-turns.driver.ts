import type { DatabaseConnection, Driver, TransactionSettings } from 'kysely';
import type { WorkPriority } from './work-priority.js';

export interface BackgroundTurnsOptions {
  /** Background work that has had no turn this long takes the next one anyway: requests first, but never background starved. */
  maxBackgroundWaitMs: number;
  now?: () => number;
}

/**
 * What the requests-first drivers share: a driver over `inner` that hands connections out itself
 * (`acquireConnection`, `releaseConnection`, `handOver`), when background work last had a turn,
 * and the two moments waiting background work is looked at again: once no request is in flight,
 * and once it is overdue a turn. Transactions go straight to `inner`.
 */
export abstract class BackgroundTurnsDriver implements Driver {
  protected readonly now: () => number;
  /** When background work last had a connection: it is due a turn once per `maxBackgroundWaitMs`. */
  protected lastBackgroundTurn: number;
  private overdueTimer: NodeJS.Timeout | null = null;
  private watchingIdle = false;

  constructor(
    protected readonly inner: Driver,
    protected readonly priority: WorkPriority,
    protected readonly opts: BackgroundTurnsOptions,
  ) {
    this.now = opts.now ?? Date.now;
    this.lastBackgroundTurn = this.now();
  }

  abstract acquireConnection(): Promise<DatabaseConnection>;
  abstract releaseConnection(connection: DatabaseConnection): Promise<void>;
  /** Gives connections to the waiters that may have one now. */
  protected abstract handOver(): void;

  protected backgroundOverdue(): boolean {
    return this.now() - this.lastBackgroundTurn >= this.opts.maxBackgroundWaitMs;
  }

  /** Waiting background work is looked at again once no request is in flight, and once it is overdue a turn. */
  protected watch(): void {
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

  init(): Promise<void> {
    return this.inner.init();
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
