/**
 * Money inside the simulator is an integer count of möngö (1/100 tugrik), so sums and
 * comparisons are exact. Conversions go through decimal text, never float arithmetic.
 */
const DECIMAL = /^(-?)(\d+)(?:\.(\d{1,2}))?$/;

/**
 * "12000.5" -> 1200050; null when the text is not an amount with at most 2 decimals.
 * Negative amounts parse so that the ministry can refuse them with a reason.
 */
export function mongoFromDecimal(text: string): number | null {
  const match = DECIMAL.exec(text);
  if (!match) return null;
  const [, sign = '', whole = '0', fraction = ''] = match;
  const mongo = Number(`${sign}${whole}${fraction.padEnd(2, '0')}`);
  return Number.isSafeInteger(mongo) ? mongo : null;
}

/** A JSON number keeps its shortest decimal text, so String() gives back what the sender wrote. */
export function mongoFromNumber(value: number): number | null {
  return Number.isFinite(value) ? mongoFromDecimal(String(value)) : null;
}

/** 1200050 -> "12000.50" */
export function mongoToFixed2(mongo: number): string {
  const digits = String(mongo).padStart(3, '0');
  return `${digits.slice(0, -2)}.${digits.slice(-2)}`;
}

/** 1200050 -> 12000.5 as a JSON number (parsed from exact decimal text). */
export function mongoToNumber(mongo: number): number {
  return Number(mongoToFixed2(mongo));
}
