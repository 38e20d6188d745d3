import { Type } from 'typebox';

/*
 * A page cursor is the key of the last row of the previous page (its nextCursor), passed back as
 * is. Lists check it here, against the shape of that key, so a malformed one is a 400 and never
 * reaches SQL (where casting it would fail). A cursor of the right shape that the list did not
 * mint for this caller is refused by the list's service, with the same message.
 */

export const CURSOR_VIOLATION = 'cursor must be the nextCursor of a previous page';

/** The cursor of a list keyed by a UUID (payments, webhook deliveries). */
export const UuidCursor = Type.String({
  pattern: '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$',
  description: 'nextCursor of the previous page',
  'x-violation': CURSOR_VIOLATION,
});

/** The cursor of a list keyed by a bigint serial (the audit log); 18 digits always fit. */
export const SerialCursor = Type.String({
  pattern: '^[0-9]{1,18}$',
  description: 'nextCursor of the previous page',
  'x-violation': CURSOR_VIOLATION,
});

/**
 * The cursor of a list keyed by a position and bound to what it lists (the events feed, a
 * webhook's delivery log; domain/page-cursor.ts): opaque, base64url.
 */
export const PositionCursor = Type.String({
  pattern: '^[A-Za-z0-9_-]{1,200}$',
  description: 'nextCursor of the previous page of this list, passed back as is; a cursor this list did not give you (another partner\'s or another webhook\'s) is a 400',
  'x-violation': CURSOR_VIOLATION,
});
