const DECIMAL = /^(0|[1-9]\d{0,13})(\.\d{1,2})?$/;

/**
 * Canonical decimal string of a tugrik amount given as a JSON number, or null when it is not
 * a positive amount with at most 2 decimals. Works on the shortest round-trip representation,
 * so 0.1 + 0.2 style artefacts are rejected rather than rounded.
 */
export function amountFromNumber(value: number): string | null {
  if (!Number.isFinite(value) || value <= 0) return null;
  const text = String(value);
  if (!DECIMAL.test(text)) return null;
  return canonicalAmount(text);
}

/** "12000.50" -> "12000.5", "12000.00" -> "12000". */
export function canonicalAmount(decimal: string): string {
  if (!decimal.includes('.')) return decimal;
  const trimmed = decimal.replace(/0+$/, '').replace(/\.$/, '');
  return trimmed === '' ? '0' : trimmed;
}

/** Amount in möngö (1/100 tugrik) as a bigint, for exact comparisons. */
export function toMongo(decimal: string): bigint {
  const [whole = '0', frac = ''] = decimal.split('.');
  return BigInt(whole) * 100n + BigInt((frac + '00').slice(0, 2));
}

export function compareAmounts(a: string, b: string): number {
  const d = toMongo(a) - toMongo(b);
  return d === 0n ? 0 : d > 0n ? 1 : -1;
}

/** JSON responses carry amounts as numbers; conversion only, no arithmetic. */
export function amountToNumber(decimal: string): number {
  return Number(decimal);
}
