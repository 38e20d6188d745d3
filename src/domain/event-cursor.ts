/*
 * The cursor of the newest-first events list: the partner it was given to and the position
 * (sequence) of the last event of the page, so paging goes on after retention removed that event.
 */
import { decodeScopedCursor, encodeScopedCursor } from './page-cursor.js';

const VERSION = 'e1';
const SEQUENCE = /^([1-9][0-9]{0,15})$/;

export function encodeEventCursor(partnerId: string, sequence: number): string {
  return encodeScopedCursor(VERSION, [partnerId], String(sequence));
}

/** The position after which the next page starts, or null when the cursor was not minted for this partner by `encodeEventCursor`. */
export function decodeEventCursor(partnerId: string, cursor: string): number | null {
  const match = decodeScopedCursor(VERSION, [partnerId], cursor, SEQUENCE);
  const sequence = Number(match?.[1]);
  return match && Number.isSafeInteger(sequence) ? sequence : null;
}
