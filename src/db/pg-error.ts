/** The SQLSTATE of an error PostgreSQL (or PGlite) raised, or undefined for any other error. */
export function pgErrorCode(err: unknown): string | undefined {
  if (typeof err !== 'object' || err === null) return undefined;
  const { code } = err as { code?: unknown };
  return typeof code === 'string' ? code : undefined;
}
