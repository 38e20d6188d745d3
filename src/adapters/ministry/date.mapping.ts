import { WireValueError } from './wire-value.error.js';

const ISO_8601 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})$/;
const MONGOLIAN_LOCAL = /^(\d{4}-\d{2}-\d{2}) (\d{2}:\d{2}:\d{2})$/;

/**
 * The instants a time column keeps as given. PostgreSQL has no year 0 and takes no ISO text past
 * year 9999 (JS writes it with an expanded year, +010000-...), and the embedded database's driver
 * reads a year below 100 back as 19xx or 20xx; outside these the store would refuse the time, or
 * change it.
 */
const EARLIEST_STORED = Date.UTC(100, 0, 1);
const LATEST_STORED = Date.UTC(9999, 11, 31, 23, 59, 59, 999);

function toIso(instant: Date, original: unknown): string {
  const ms = instant.getTime();
  if (Number.isNaN(ms)) throw new WireValueError(`not a valid time: ${String(original)}`);
  if (ms < EARLIEST_STORED || ms > LATEST_STORED) {
    throw new WireValueError(`a time outside the years 100-9999 (UTC) the service stores: ${String(original)}`);
  }
  return instant.toISOString();
}

/** Any ISO 8601 time with an offset -> UTC ISO string. */
export function isoFromIso(text: string): string {
  if (!ISO_8601.test(text)) throw new WireValueError(`not an ISO 8601 time with offset: "${text}"`);
  return toIso(new Date(text), text);
}

/** "2025-11-01 09:30:00" in Mongolian time; Mongolia has no DST, so always UTC+8. */
export function isoFromMongolianLocal(text: string): string {
  const match = MONGOLIAN_LOCAL.exec(text);
  if (!match) throw new WireValueError(`not a "YYYY-MM-DD HH:mm:ss" time: "${text}"`);
  return toIso(new Date(`${match[1]}T${match[2]}+08:00`), text);
}

export function isoFromEpochMs(ms: number): string {
  if (!Number.isSafeInteger(ms)) throw new WireValueError(`not epoch milliseconds: ${ms}`);
  return toIso(new Date(ms), ms);
}

/** Applies a mapping to a value that may be null. */
export function nullable<T, R>(value: T | null, map: (present: T) => R): R | null {
  return value === null ? null : map(value);
}
