import type { DatabaseConnection, Dialect } from 'kysely';
import { withDriver } from './dialect-wrapper.js';
import type { WorkPriority } from './work-priority.js';
import { BackgroundTurnsDriver, type BackgroundTurnsOptions } from './background-turns.driver.js';

/**
 * One turn of the event loop, so the sockets are read before background work takes the
 * connection: an embedded statement runs on the event loop and resolves in a microtask, so
 * without it a backlog of background statements ran back to back (for 100-300 ms under load)
 * while a partner's request sat unread in its socket, not yet counted as in flight.
 */
const yieldToIo = () => new Promise<void>((resolve) => setImmediate(resolve));

export type RequestsFirstOptions = BackgroundTurnsOptions;

interface Waiter {
  wake: () => void;
  since: number;
}

/**
 * A driver over one connection (embedded PGlite, whose statements run on the event loop) that
 * serves requests first: a waiting request gets the connection before any waiting background
 * work, and background work gets it only while no request is being served at all, since a
 * request between two of its statements (waiting for a ministry, say) would otherwise find its
 * next statement queued behind a batch of confirmation checks. Background work that has had no
 * turn for `maxBackgroundWaitMs` goes next anyway, once, so it always progresses.
 * Savepoints are left out, as the embedded driver has none.
 */
export class RequestsFirstDriver extends BackgroundTurnsDriver {
  private busy = false;
  private readonly requests: Waiter[] = [];
  private readonly background: Waiter[] = [];
  /** Background work is to have the connection after one turn of the event loop (see yieldToIo). */
  private hopping = false;

  async acquireConnection(): Promise<DatabaseConnection> {
    const isBackground = this.priority.isBackground();
    if (isBackground) await yieldToIo();
    if (this.busy || (isBackground && (this.hopping || !this.backgroundMayGo()))) {
      const queue = isBackground ? this.background : this.requests;
      // Whoever hands the turn over sets `busy` first, so nobody slips in between.
      const turn = new Promise<void>((wake) => queue.push({ wake, since: this.now() }));
      if (isBackground && !this.busy) this.watch();
      await turn;
    } else {
      this.busy = true;
    }
    if (isBackground) this.lastBackgroundTurn = this.now();
    return this.inner.acquireConnection();
  }

  async releaseConnection(connection: DatabaseConnection): Promise<void> {
    await this.inner.releaseConnection(connection);
    this.busy = false;
    this.handOver();
  }

  /** Background work may take a free connection while no request is in flight, or once it is overdue a turn. */
  private backgroundMayGo(): boolean {
    return this.priority.requestsInFlight() === 0 || this.backgroundOverdue();
  }

  /**
   * Gives a free connection to the next waiter: a waiting request, unless background work is
   * overdue a turn; background work when it may go. Under steady requests background work still
   * gets a turn per interval, and its backlog never takes a run of turns from the requests.
   */
  protected handOver(): void {
    if (this.busy) return;
    const next = this.nextWaiter();
    if (next === 'request') {
      this.busy = true;
      this.requests.shift()?.wake();
    } else if (next === 'background') {
      if (this.hopping) return;
      this.hopping = true;
      setImmediate(() => {
        this.hopping = false;
        if (this.busy) return;
        if (this.nextWaiter() !== 'background') return this.handOver();
        this.busy = true;
        this.background.shift()?.wake();
      });
    } else if (this.background.length > 0) {
      this.watch();
    }
  }

  /** Who gets the free connection next: a waiting request, unless background work is overdue a turn; background work when it may go. */
  private nextWaiter(): 'request' | 'background' | null {
    const backgroundFirst = this.background.length > 0 && (this.requests.length === 0 ? this.backgroundMayGo() : this.backgroundOverdue());
    if (backgroundFirst) return 'background';
    return this.requests.length > 0 ? 'request' : null;
  }
}

/** `dialect` with its driver serving requests first (see RequestsFirstDriver). */
export function requestsFirst(dialect: Dialect, priority: WorkPriority, opts: RequestsFirstOptions): Dialect {
  return withDriver(dialect, (driver) => new RequestsFirstDriver(driver, priority, opts));
}
