/** A single upstream value (amount, date) that does not have the documented form. */
export class WireValueError extends Error {
  override name = 'WireValueError';
}
