/**
 * Monthly partitions of the tables that only grow: their names, their bounds (whole UTC months),
 * and which of them retention may drop. No I/O: the partition repository reads the catalog and
 * runs the DDL.
 */

/** A partition's range on its table's created_at: [from, to), null for MINVALUE / MAXVALUE. */
export interface PartitionRange {
  name: string;
  from: Date | null;
  to: Date | null;
}

export function monthStart(at: Date): Date {
  return new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth(), 1));
}

export function addMonths(month: Date, n: number): Date {
  return new Date(Date.UTC(month.getUTCFullYear(), month.getUTCMonth() + n, 1));
}

/** `events_p202612` holds December 2026 of `events`. */
export function monthPartitionName(table: string, month: Date): string {
  const mm = String(month.getUTCMonth() + 1).padStart(2, '0');
  return `${table}_p${month.getUTCFullYear()}${mm}`;
}

/** The table as it was before it was partitioned: one partition from MINVALUE to the cutover. */
export function legacyPartitionName(table: string): string {
  return `${table}_legacy`;
}

/**
 * Where a table's legacy partition ends and the monthly ones begin: the first month boundary at
 * least `marginMs` after `now`. Rows written while the table is being moved carry created_at =
 * now, and must fall below the bound the move's CHECK constraint promises.
 */
export function cutoverMonth(now: Date, marginMs: number): Date {
  return addMonths(monthStart(new Date(now.getTime() + marginMs)), 1);
}

/**
 * The months [first, first + count) that no existing partition covers. A month that overlaps an
 * existing partition (the legacy one reaches into the current or next month) is left out: the
 * two would overlap and PostgreSQL refuses that.
 */
export function missingMonths(existing: readonly PartitionRange[], first: Date, count: number): Date[] {
  const months: Date[] = [];
  for (let i = 0; i < count; i++) {
    const from = addMonths(first, i);
    const to = addMonths(first, i + 1);
    const covered = existing.some((p) => (p.from === null || p.from < to) && (p.to === null || p.to > from));
    if (!covered) months.push(from);
  }
  return months;
}

/** Partitions wholly before `before`: every row in them is older than the retention cut-off. */
export function expiredPartitions<P extends PartitionRange>(existing: readonly P[], before: Date): P[] {
  return existing.filter((p) => p.to !== null && p.to.getTime() <= before.getTime()).sort((a, b) => (a.to?.getTime() ?? 0) - (b.to?.getTime() ?? 0));
}

const BOUND = /FROM \((MINVALUE|'[^']+')\) TO \((MAXVALUE|'[^']+')\)/;
/** timestamptz as PostgreSQL prints it, in whatever TimeZone the session has: `2026-12-01 08:00:00+08`. */
const PG_TIMESTAMPTZ = /^(\d{4}-\d{2}-\d{2}) (\d{2}:\d{2}:\d{2}(?:\.\d+)?)([+-]\d{2})(?::?(\d{2}))?$/;

function parseTimestamptz(text: string): Date | null {
  const m = PG_TIMESTAMPTZ.exec(text);
  if (!m) return null;
  const at = new Date(`${m[1]}T${m[2]}${m[3]}:${m[4] ?? '00'}`);
  return Number.isNaN(at.getTime()) ? null : at;
}

/** The range of `FOR VALUES FROM ('2026-12-01 00:00:00+00') TO ('2027-01-01 00:00:00+00')` (pg_get_expr of relpartbound). */
export function parsePartitionBound(name: string, bound: string): PartitionRange | null {
  const m = BOUND.exec(bound);
  if (!m) return null;
  const [from, to] = [m[1], m[2]].map((v) => (v === undefined || v === 'MINVALUE' || v === 'MAXVALUE' ? null : parseTimestamptz(v.slice(1, -1))));
  // A bound that is there but unreadable must not pass for MINVALUE / MAXVALUE: retention would misjudge it.
  if ((from === null && m[1] !== 'MINVALUE') || (to === null && m[2] !== 'MAXVALUE')) return null;
  return { name, from: from ?? null, to: to ?? null };
}
