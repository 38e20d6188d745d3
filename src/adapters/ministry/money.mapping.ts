import { WireValueError } from './wire-value.error.js';

/**
 * Amounts travel as canonical decimal strings in tugrik: no leading zeros, at most 2 decimals,
 * no trailing fractional zeros ("12000", "12000.5", "12000.25"). Every conversion works on the
 * decimal text or on integer möngö (1/100 tugrik), never on float arithmetic.
 */
const DECIMAL = /^(\d+)(?:\.(\d{1,2}))?$/;

function parts(text: string): { whole: string; fraction: string } {
  const match = DECIMAL.exec(text);
  if (!match) throw new WireValueError(`not a non-negative amount with at most 2 decimals: "${text}"`);
  const [, whole = '0', fraction = ''] = match;
  return { whole: whole.replace(/^0+(?=\d)/, ''), fraction: fraction.replace(/0+$/, '') };
}

/** "012000.50" -> "12000.5" */
export function canonicalAmount(text: string): string {
  const { whole, fraction } = parts(text);
  return fraction ? `${whole}.${fraction}` : whole;
}

/** A JSON number's shortest decimal text is exactly what the sender wrote: 12000.5 -> "12000.5". */
export function amountFromNumber(value: number): string {
  if (!Number.isFinite(value)) throw new WireValueError(`not a finite amount: ${value}`);
  return canonicalAmount(String(value));
}

/** Integer möngö: 1200050 -> "12000.5" */
export function amountFromMongo(mongo: number): string {
  if (!Number.isSafeInteger(mongo) || mongo < 0) throw new WireValueError(`not a möngö amount: ${mongo}`);
  const digits = String(mongo).padStart(3, '0');
  return canonicalAmount(`${digits.slice(0, -2)}.${digits.slice(-2)}`);
}

/** "12000.5" -> 1200050 */
export function amountToMongo(amount: string): number {
  const { whole, fraction } = parts(amount);
  const mongo = Number(`${whole}${fraction.padEnd(2, '0')}`);
  if (!Number.isSafeInteger(mongo)) throw new WireValueError(`amount too large: "${amount}"`);
  return mongo;
}

/** "12000.5" -> "12000.50" */
export function amountToFixed2(amount: string): string {
  const { whole, fraction } = parts(amount);
  return `${whole}.${fraction.padEnd(2, '0')}`;
}

/** "12000.5" -> 12000.5; JSON.stringify writes the same decimal text back. */
export function amountToNumber(amount: string): number {
  return Number(canonicalAmount(amount));
}
