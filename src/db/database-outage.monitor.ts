import type { Logger } from '../domain/logger.port.js';
import { isBrokenClientError, isConnectionEnd, isDatabaseUnavailable, isDatabaseUnresponsive } from './pg-error.js';

/**
 * Whether the database is away, as the process last saw it. Background work checks it before each
 * pass and stays quiet while the database is away, and requests are refused at once (503) rather
 * than each waiting out a deadline: an outage logs one line when it starts and one when it ends,
 * however many passes, connections and checks it breaks.
 */
export interface DatabaseOutage {
  readonly down: boolean;
  /**
   * Down because it stopped answering (a deadline passed), not because it refused or closed
   * connections: until a probe finds it, connections are refused at once rather than each
   * request waiting out a deadline of its own.
   */
  readonly unresponsive: boolean;
  /** How many outages have begun: a connection made before the latest one is not trusted after it. */
  readonly outages: number;
  /**
   * True when `err` says the database is unreachable or a connection to it ended (the caller need
   * not log it); the first such error of an outage is logged here. A connection's end alone begins
   * no outage: a new connection is asked first, and only if it fails has the database gone.
   */
  absorb(err: unknown): boolean;
  /** The database answered again: the outage, if one was under way, is over. */
  recovered(): void;
  /** While away: asks whether the database is back, one probe at a time and at most one per interval. */
  probe(): void;
}

/** While the database is away, probes start at most this often, however many requests and passes ask. */
const PROBE_EVERY_MS = 500;

const OUTAGE_LINE = 'database unavailable: background work paused, requests that need it answer 503 until it is back';

/**
 * `ping` answers whether the database is there, within its own deadline (never through the request
 * pool, and on a new connection when its own has ended). Without one, a connection's end is taken
 * for an outage at once.
 */
export function createDatabaseOutage(log: Logger, onChange?: (down: boolean) => void, ping?: () => Promise<boolean>): DatabaseOutage {
  let down = false;
  let unresponsive = false;
  let outages = 0;
  let since = 0;
  let probing = false;
  let lastProbeAt = 0;
  let confirming = false;

  function begin(err: unknown): void {
    if (down) return;
    down = true;
    outages += 1;
    since = Date.now();
    log.warn({ reason: err instanceof Error ? err.message : String(err) }, OUTAGE_LINE);
    onChange?.(true);
  }

  // A restart ends every connection and the ping's new one is refused at once; an operator's kill,
  // the server's idle limit on a transaction a paused process held open, or a proxy's cull ends
  // some, and the ping answers. Errors while a ping is out wait for its answer.
  function confirm(err: unknown, check: () => Promise<boolean>): void {
    if (confirming) return;
    confirming = true;
    const reason = err instanceof Error ? err.message : String(err);
    void check()
      .then(
        (answered) => {
          if (!answered) return begin(err);
          if (!down) log.warn({ reason }, 'database connection ended; the database still answers, so only that connection is gone');
        },
        () => begin(err),
      )
      .finally(() => (confirming = false));
  }
  const outage: DatabaseOutage = {
    get down() {
      return down;
    },
    get outages() {
      return outages;
    },
    get unresponsive() {
      return unresponsive;
    },
    absorb(err) {
      if (!isDatabaseUnavailable(err)) return false;
      if (isDatabaseUnresponsive(err)) unresponsive = true;
      if (down || isBrokenClientError(err)) return true;
      if (ping && isConnectionEnd(err)) confirm(err, ping);
      else begin(err);
      return true;
    },
    recovered() {
      if (!down) return;
      down = false;
      unresponsive = false;
      log.info({ outageMs: Date.now() - since }, 'database available again: background work resumed');
      onChange?.(false);
    },
    probe() {
      if (!down || !ping || probing || Date.now() - lastProbeAt < PROBE_EVERY_MS) return;
      probing = true;
      lastProbeAt = Date.now();
      void ping()
        .then((ok) => ok && outage.recovered())
        .catch(() => undefined)
        .finally(() => (probing = false));
    },
  };
  return outage;
}
