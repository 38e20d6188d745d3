/*
 * Formatting the pages share, pure (no DOM), so the unit tests hold it. Moments are shown in the
 * viewer's local time, always YYYY-MM-DD whatever the browser's locale; a finance day or a due
 * date is a calendar day in Mongolian time, by the domain's own rule.
 */
import { financeDayOf, isFinanceDay } from '../../domain/finance-day.js';

export const pad = (n: number): string => String(n).padStart(2, '0');

const localDay = (d: Date) => `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}`;

/** HH:mm:ss of a local moment. */
export const formatClock = (d: Date): string => `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;

/** A moment in local time: YYYY-MM-DD HH:mm:ss, or HH:mm without seconds; '—' for none. */
export function formatLocalTime(iso: string | null | undefined, seconds = true): string {
  if (!iso) return '—';
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  const clock = formatClock(d);
  return `${localDay(d)} ${seconds ? clock : clock.slice(0, 5)}`;
}

/** The Mongolian calendar day of a moment (a due date), YYYY-MM-DD. */
export function formatFinanceDay(iso: string | null | undefined): string {
  if (!iso) return '—';
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? iso : financeDayOf(d);
}

const EXACT = new Intl.NumberFormat('en-US', { minimumFractionDigits: 2, maximumFractionDigits: 2 });
const SHORT = new Intl.NumberFormat('en-US', { minimumFractionDigits: 0, maximumFractionDigits: 2 });

/** Tugrik: `fixed` always shows the two decimals (the console's columns line up), otherwise only those there are. */
export function formatTugrik(amount: number | null | undefined, fixed = true): string {
  return typeof amount === 'number' ? `${(fixed ? EXACT : SHORT).format(amount)} ₮` : '—';
}

export const shortId = (id: string | null | undefined): string => (id ? id.slice(0, 8) : '—');

export const compactJson = (value: unknown): string => (value === null || value === undefined ? '' : JSON.stringify(value));

/** getTimezoneOffset() in Ulaanbaatar (UTC+8 all year), whose calendar days are the finance days. */
const ULAANBAATAR_OFFSET = -480;

const utcOffset = (timezoneOffset: number): string => {
  const east = -timezoneOffset;
  const abs = Math.abs(east);
  return `UTC${east >= 0 ? '+' : '-'}${pad(Math.floor(abs / 60))}:${pad(abs % 60)}`;
};

/**
 * The header's note for the given getTimezoneOffset() (minutes west of UTC): "times in local time
 * (UTC+08:00)", and away from Ulaanbaatar that finance days keep its clock.
 */
export function timezoneNote(timezoneOffset: number): string {
  const local = `times in local time (${utcOffset(timezoneOffset)})`;
  return timezoneOffset === ULAANBAATAR_OFFSET ? local : `${local} · finance days in Ulaanbaatar time (${utcOffset(ULAANBAATAR_OFFSET)})`;
}

/**
 * Beneath a local time where its day is meant (a payment's creation or settlement), the finance
 * day it falls on; null where the viewer's clock is Ulaanbaatar's, since the two days are then one.
 * `timezoneOffset` is the viewer's getTimezoneOffset() at that moment.
 */
export function financeDayLabel(iso: string | null | undefined, timezoneOffset: number): string | null {
  if (!iso || timezoneOffset === ULAANBAATAR_OFFSET) return null;
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? null : `finance day ${financeDayOf(d)}`;
}

/** A query string of the given values, blank ones left out; '' when none is left. */
export function queryString(params: Record<string, string | null | undefined>): string {
  const q = new URLSearchParams();
  for (const [key, value] of Object.entries(params)) if (value !== null && value !== undefined && value.trim() !== '') q.set(key, value.trim());
  const text = q.toString();
  return text ? `?${text}` : '';
}

/** The finance day `by` days from `day`; today's when `day` is not one. */
export function shiftFinanceDay(day: string, by: number, now: Date): string {
  if (!isFinanceDay(day)) return financeDayOf(now);
  return new Date(new Date(`${day}T00:00:00Z`).getTime() + by * 86_400_000).toISOString().slice(0, 10);
}

const DAY = /^\d{4}-\d{2}-\d{2}$/;
const LOCAL_TIME = /^(\d{4})-(\d{2})-(\d{2})[ T](\d{2}):(\d{2})(?::(\d{2}))?$/;

/**
 * A search bound as typed: a bare day passes as a finance day (the service takes it from its
 * start or to its end, in Mongolian time); a local date and time becomes an ISO instant.
 */
export function timeBound(raw: string, label: string): string {
  const text = raw.trim();
  if (!text || DAY.test(text)) return text;
  const m = LOCAL_TIME.exec(text);
  const d = m ? new Date(Number(m[1]), Number(m[2]) - 1, Number(m[3]), Number(m[4]), Number(m[5]), Number(m[6] ?? 0)) : null;
  if (!d || Number.isNaN(d.getTime())) throw new Error(`${label} is written YYYY-MM-DD or YYYY-MM-DD HH:mm:ss (local time)`);
  return d.toISOString();
}
