/** Mongolia has no DST, so its local time is always UTC+8. */
const MONGOLIA_OFFSET_MS = 8 * 60 * 60 * 1000;

/** YYYY-MM-DD of the instant in Mongolian local time. */
export function financeDayOf(instant: Date): string {
  return new Date(instant.getTime() + MONGOLIA_OFFSET_MS).toISOString().slice(0, 10);
}

/** "2025-11-01 09:30:00" in Mongolian local time. */
export function toMongolianLocal(instant: Date): string {
  return new Date(instant.getTime() + MONGOLIA_OFFSET_MS).toISOString().slice(0, 19).replace('T', ' ');
}

const FINANCE_DAY = /^\d{4}-\d{2}-\d{2}$/;

export function isFinanceDay(text: string): boolean {
  return FINANCE_DAY.test(text) && !Number.isNaN(Date.parse(`${text}T00:00:00Z`));
}
