/*
 * Amounts travel as canonical decimal strings in tugrik: no leading zeros, at most 2 decimals,
 * no trailing fractional zeros ("12000", "12000.5", "12000.25"). Every conversion works on the
 * decimal text or on integer möngö (1/100 tugrik), never on float arithmetic.
 */

/** An amount that does not have the form its source documents. */
export class AmountError extends Error {
  override name = 'AmountError';
}

const DECIMAL = /^(\d+)(?:\.(\d{1,2}))?$/;
/** A partner's requested amount: positive, at most 14 whole digits (numeric(24,2) with room). */
const REQUESTED = /^(0|[1-9]\d{0,13})(\.\d{1,2})?$/;

function parts(text: string): { whole: string; fraction: string } {
  const match = DECIMAL.exec(text);
  if (!match) throw new AmountError(`not a non-negative amount with at most 2 decimals: "${text}"`);
  const [, whole = '0', fraction = ''] = match;
  return { whole: whole.replace(/^0+(?=\d)/, ''), fraction: fraction.replace(/0+$/, '') };
}

/** "012000.50" -> "12000.5" */
export function canonicalAmount(text: string): string {
  const { whole, fraction } = parts(text);
  return fraction ? `${whole}.${fraction}` : whole;
}

/**
 * Whole digits of the largest amount the amount columns (numeric(16,2)) hold: one more and the
 * write that stores it fails, taking every other invoice of the same statement with it.
 */
const STORED_WHOLE_DIGITS = 14;

/**
 * An amount a ministry system sent as decimal text, canonical, and refused unless the service can
 * store it (below 10^14 tugrik): a larger one is that system's bad answer, not a failed write.
 */
export function storableAmount(text: string): string {
  const { whole, fraction } = parts(text);
  if (whole.length > STORED_WHOLE_DIGITS) {
    throw new AmountError(`amount of ${whole.length} whole digits, past the ${STORED_WHOLE_DIGITS} an amount is stored with`);
  }
  return fraction ? `${whole}.${fraction}` : whole;
}

/**
 * A JSON number's shortest decimal text is exactly what the sender wrote: 12000.5 -> "12000.5".
 * Only ministry answers carry amounts as numbers, so it is bounded as storableAmount is.
 */
export function amountFromNumber(value: number): string {
  if (!Number.isFinite(value)) throw new AmountError(`not a finite amount: ${value}`);
  return storableAmount(String(value));
}

/**
 * The canonical amount a partner asked for, or null when it is not a positive amount with at
 * most 2 decimals. 0.1 + 0.2 style artefacts are refused rather than rounded.
 */
export function requestedAmount(value: number): string | null {
  if (!Number.isFinite(value) || value <= 0) return null;
  const text = String(value);
  return REQUESTED.test(text) ? canonicalAmount(text) : null;
}

/** Integer möngö: 1200050 -> "12000.5" */
export function amountFromMongo(mongo: number): string {
  if (!Number.isSafeInteger(mongo) || mongo < 0) throw new AmountError(`not a möngö amount: ${mongo}`);
  const digits = String(mongo).padStart(3, '0');
  return canonicalAmount(`${digits.slice(0, -2)}.${digits.slice(-2)}`);
}

/** "12000.5" -> 1200050n, for exact comparisons. */
export function toMongo(amount: string): bigint {
  const { whole, fraction } = parts(amount);
  return BigInt(`${whole}${fraction.padEnd(2, '0')}`);
}

/** "12000.5" -> 1200050, for wire formats that carry integer möngö. */
export function amountToMongo(amount: string): number {
  const mongo = Number(toMongo(amount));
  if (!Number.isSafeInteger(mongo)) throw new AmountError(`amount too large: "${amount}"`);
  return mongo;
}

/** "12000.5" -> "12000.50" */
export function amountToFixed2(amount: string): string {
  const { whole, fraction } = parts(amount);
  return `${whole}.${fraction.padEnd(2, '0')}`;
}

export function compareAmounts(a: string, b: string): number {
  const d = toMongo(a) - toMongo(b);
  return d === 0n ? 0 : d > 0n ? 1 : -1;
}

/** JSON carries amounts as numbers: "12000.25" -> 12000.25, which JSON.stringify writes back as the same text. */
export function amountToNumber(amount: string): number {
  return Number(amount);
}
