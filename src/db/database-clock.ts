import { sql } from 'kysely';
import type { Db } from './database.js';
import type { Clock } from '../domain/clock.port.js';

/** How often the offset to the database's clock is measured again (instance clocks drift, or get stepped). */
const RESYNC_MS = 30_000;

export interface DatabaseClock {
  now: Clock;
  /** This instance's clock subtracted from the database's, as last measured (ms). */
  offsetMs(): number;
  stop(): void;
}

/**
 * The database's clock, read locally: this instance's time plus its measured offset to the
 * database's `clock_timestamp()`. Leases and due times are compared on it, so instances whose own
 * clocks disagree (a skewed VM, a stepped NTP) still agree on when a lease has run out. A failed
 * measurement keeps the last offset.
 */
export async function createDatabaseClock(db: Db, resyncMs = RESYNC_MS): Promise<DatabaseClock> {
  let offset = 0;
  async function measure(): Promise<void> {
    const before = Date.now();
    const { rows } = await sql<{ at: Date }>`SELECT clock_timestamp() AS at`.execute(db);
    const after = Date.now();
    const at = rows[0]?.at;
    if (at instanceof Date) offset = at.getTime() - Math.round((before + after) / 2);
  }
  await measure();
  const timer = setInterval(() => void measure().catch(() => undefined), resyncMs);
  timer.unref();
  return {
    now: () => new Date(Date.now() + offset),
    offsetMs: () => offset,
    stop: () => clearInterval(timer),
  };
}
