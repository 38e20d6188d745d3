/*
 * The cursor of the newest-first events list: the partner it was given to and the position
 * (sequence) of the last event of the page, so paging goes on after retention removed that event.
 * Versioned, so its form can change while cursors already handed out are still recognised.
 */

const VERSION = 'e1';
const FORM = /^e1:([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}):([1-9][0-9]{0,15})$/;

export function encodeEventCursor(partnerId: string, sequence: number): string {
  return Buffer.from(`${VERSION}:${partnerId.toLowerCase()}:${sequence}`, 'utf8').toString('base64url');
}

/** The position after which the next page starts, or null when the cursor was not minted for this partner by `encodeEventCursor`. */
export function decodeEventCursor(partnerId: string, cursor: string): number | null {
  const match = FORM.exec(Buffer.from(cursor, 'base64url').toString('utf8'));
  if (!match || match[1] !== partnerId.toLowerCase()) return null;
  const sequence = Number(match[2]);
  return Number.isSafeInteger(sequence) ? sequence : null;
}
