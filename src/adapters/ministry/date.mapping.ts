import { WireValueError } from './wire-value.error.js';

const ISO_8601 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})$/;
const MONGOLIAN_LOCAL = /^(\d{4}-\d{2}-\d{2}) (\d{2}:\d{2}:\d{2})$/;

function toIso(instant: Date, original: unknown): string {
  if (Number.isNaN(instant.getTime())) throw new WireValueError(`not a valid time: ${String(original)}`);
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
