import { Type } from 'typebox';

/*
 * A page cursor is the key of the last row of the previous page (its nextCursor), passed back as
 * is. Lists check it here, against the shape of that key, so a malformed one is a 400 and never
 * reaches SQL (where casting it would fail).
 */

const VIOLATION = 'cursor must be the nextCursor of a previous page';

/** The cursor of a list keyed by a UUID (payments, webhook deliveries). */
export const UuidCursor = Type.String({
  pattern: '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$',
  description: 'nextCursor of the previous page',
  'x-violation': VIOLATION,
});

/** The cursor of a list keyed by a bigint serial (the audit log); 18 digits always fit. */
export const SerialCursor = Type.String({
  pattern: '^[0-9]{1,18}$',
  description: 'nextCursor of the previous page',
  'x-violation': VIOLATION,
});
