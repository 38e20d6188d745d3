/*
 * A page cursor bound to the list it pages: `version:scope…:position` in base64url, where the
 * scope is the ids of what the list belongs to (a partner, a webhook). A list takes back only a
 * cursor it minted for that same scope, so another partner's or another webhook's cursor, like a
 * made-up one, is refused instead of paging a list it was never given for. The version lets a
 * list change the form of its position while cursors already handed out are still recognised.
 * Opaque to the caller, not secret: a cursor one writes for its own scope only pages its own rows.
 */

const scopePrefix = (version: string, scope: readonly string[]) => `${[version, ...scope.map((id) => id.toLowerCase())].join(':')}:`;

export function encodeScopedCursor(version: string, scope: readonly string[], position: string): string {
  return Buffer.from(scopePrefix(version, scope) + position, 'utf8').toString('base64url');
}

/**
 * The position of a cursor minted by `encodeScopedCursor` with this version and scope, if it has
 * the `position` form; null for any other.
 */
export function decodeScopedCursor(version: string, scope: readonly string[], cursor: string, position: RegExp): RegExpExecArray | null {
  const text = Buffer.from(cursor, 'base64url').toString('utf8');
  const prefix = scopePrefix(version, scope);
  return text.startsWith(prefix) ? position.exec(text.slice(prefix.length)) : null;
}
