import { WireValueError } from './wire-value.error.js';

/**
 * The invoice columns a ministry's text lands in are unbounded `text`, but the keys among them
 * (reference, payer register, plate, tax reference; a settlement's payment id) are indexed, and
 * one PostgreSQL btree entry holds at most 2704 bytes: a longer key that does not compress fails
 * the write that stores it. 1 KiB leaves the rest of the entry room and is far past any real
 * identifier (partners search by at most 64 characters).
 */
const MAX_KEY_BYTES = 1024;

/** A key as the ministry gave it, refused when no index entry could hold it. */
export function storableKey(text: string): string {
  const bytes = Buffer.byteLength(text, 'utf8');
  if (bytes > MAX_KEY_BYTES) throw new WireValueError(`a key of ${bytes} bytes, past the ${MAX_KEY_BYTES} one is stored with`);
  return text;
}
