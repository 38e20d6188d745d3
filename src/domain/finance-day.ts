/** A finance day is a calendar day in Mongolian time (UTC+8, no daylight saving), YYYY-MM-DD. */
const OFFSET_MS = 8 * 3600_000;
const DAY_MS = 24 * 3600_000;
const PATTERN = /^(\d{4})-(\d{2})-(\d{2})$/;

export function financeDayOf(at: Date): string {
  return new Date(at.getTime() + OFFSET_MS).toISOString().slice(0, 10);
}

/** True for a real calendar day written YYYY-MM-DD (2025-02-30 is not one). */
export function isFinanceDay(text: string): boolean {
  const m = PATTERN.exec(text);
  if (!m) return false;
  const date = new Date(`${text}T00:00:00Z`);
  return !Number.isNaN(date.getTime()) && date.toISOString().slice(0, 10) === text;
}

/** The instants the day covers: from its start (inclusive) to the next day's start (exclusive). */
export function financeDayBounds(day: string): { from: Date; to: Date } {
  const from = new Date(new Date(`${day}T00:00:00Z`).getTime() - OFFSET_MS);
  return { from, to: new Date(from.getTime() + DAY_MS) };
}

export function previousFinanceDay(at: Date): string {
  return financeDayOf(new Date(at.getTime() - DAY_MS));
}

/** Minutes after midnight of a time of day written HH:MM (RECONCILE_AT), to compare with minutesIntoFinanceDay. */
export function clockTimeMinutes(hhmm: string): number {
  const [hours = 0, minutes = 0] = hhmm.split(':').map(Number);
  return hours * 60 + minutes;
}

/** Minutes since midnight of the finance day `at` falls on. */
export function minutesIntoFinanceDay(at: Date): number {
  const local = new Date(at.getTime() + OFFSET_MS);
  return local.getUTCHours() * 60 + local.getUTCMinutes();
}

/** The time of day in Mongolia as a customer reads it on a receipt: "2026-12-02 14:05". */
export function mongolianLocalTime(at: Date): string {
  return new Date(at.getTime() + OFFSET_MS).toISOString().slice(0, 16).replace('T', ' ');
}
