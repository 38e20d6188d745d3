import type { SearchField } from '../simulator.state.js';

export interface SearchQuery {
  field: SearchField;
  value: string;
}

/** The single search filter in a query string; null unless exactly one known parameter is given. */
export function pickSearch(
  query: Record<string, string | undefined>,
  params: Record<string, SearchField>,
): SearchQuery | null {
  const given = Object.entries(params).flatMap(([name, field]) => {
    const value = query[name];
    return value ? [{ field, value }] : [];
  });
  return given.length === 1 ? (given[0] ?? null) : null;
}
