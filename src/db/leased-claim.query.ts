import { sql, type RawBuilder } from 'kysely';
import type { Db } from './database.js';

/**
 * Leased work as a table describes it: which rows are due, in which lanes (a ministry system, a
 * webhook endpoint, a partner) they are claimed, and how a claim marks them as held.
 */
export interface LeasedWorkSpec {
  table: string;
  /** The row's key column(s). */
  key: readonly string[];
  /** When a row is next due; claimed oldest first. */
  dueColumn: string;
  /** The column a claim sets to the lease's end; unset, the due column itself (a claim pushes the row's due time forward). */
  leaseColumn?: string;
  /** The lease token: the column every fenced write compares, and what a claim sets it to (a counter + 1, a new uuid). */
  token: { column: string; next: RawBuilder<unknown> };
  /** What else makes a row claimable (its status). */
  pending: RawBuilder<unknown>;
  /** The column whose value is a row's lane. */
  laneColumn: string;
  /**
   * One row per lane with free slots: `lane_key`, `free` (the most of its rows this claim may
   * take) and `turn_key` (lanes of one turn key take turns, e.g. a partner's webhooks).
   */
  lanes: RawBuilder<unknown>;
  /** Further CTEs (`name AS (...)`) that `lanes` and `turnCap` read. */
  with?: readonly RawBuilder<unknown>[];
  /**
   * How many rows one turn key may take, as an SQL expression over the candidate row `r`
   * (`r.turn_key`) and the CTE `locked` (every candidate). Unset, only the lanes' `free` bounds it.
   */
  turnCap?: RawBuilder<unknown>;
  /** Other columns the claim sets. */
  alsoSet?: RawBuilder<unknown>;
  /** The columns the claim returns (from the CTE `claimed`, alias `t` of the table). */
  returning: RawBuilder<unknown>;
  /** A query over `claimed` that adds what the caller needs; unset, `SELECT * FROM claimed`. */
  select?: RawBuilder<unknown>;
}

export interface ClaimWindow {
  now: Date;
  leaseUntil: Date;
  /** The most rows in all. */
  batch: number;
  /** Rows due by this time are claimable: `now` when unset; null for any time (an operator's run of a row not yet due). */
  dueBy?: Date | null;
}

/** Every claimed row carries its lease token; a write under the lease presents it. */
export type Leased<Row, Token = number> = Row & { lease_token: Token };

/**
 * The one claim of every kind of leased work. Each lane's due rows are probed on their own, at
 * most its free slots, oldest first, locked FOR UPDATE SKIP LOCKED so instances claiming at once
 * take disjoint rows. When the batch is short, turn keys take turns: each one's first row, then
 * each one's second, oldest first within a turn (and a turn key's lanes alternate). The claim
 * holds the rows until `leaseUntil` and sets a new lease token; any holder with an older token
 * changes nothing.
 */
export async function claimLeased<Row, Token = number>(db: Db, spec: LeasedWorkSpec, window: ClaimWindow): Promise<Leased<Row, Token>[]> {
  if (window.batch <= 0) return [];
  const keys = spec.key.map((k) => sql.ref(k));
  const keyOf = (alias: string) => sql.join(spec.key.map((k) => sql.ref(`${alias}.${k}`)));
  const due = sql.ref(spec.dueColumn);
  const lease = sql.ref(spec.leaseColumn ?? spec.dueColumn);
  const token = sql.ref(spec.token.column);
  const dueBy = window.dueBy === null ? sql`true` : sql`${due} <= ${window.dueBy ?? window.now}::timestamptz`;
  const ctes = [...(spec.with ?? []), sql`lanes AS (${spec.lanes})`];
  const { rows } = await sql<Leased<Row, Token>>`
    WITH ${sql.join(ctes)},
    locked AS (
      SELECT l.lane_key, l.turn_key, c.* FROM lanes l
      CROSS JOIN LATERAL (
        SELECT ${sql.join(keys)}, ${due} AS due_at FROM ${sql.table(spec.table)}
        WHERE ${sql.ref(spec.laneColumn)} = l.lane_key AND ${spec.pending} AND ${dueBy}
        ORDER BY ${due}
        LIMIT l.free
        FOR UPDATE SKIP LOCKED
      ) c
      WHERE l.free > 0
    ), ranked AS (
      SELECT *, row_number() OVER (PARTITION BY lane_key ORDER BY due_at, ${sql.join(keys)}) AS lane_rank FROM locked
    ), turns AS (
      SELECT *, row_number() OVER (PARTITION BY turn_key ORDER BY lane_rank, due_at, ${sql.join(keys)}) AS turn FROM ranked
    ), chosen AS (
      SELECT ${sql.join(keys)} FROM turns r
      WHERE ${spec.turnCap ? sql`r.turn <= ${spec.turnCap}` : sql`true`}
      ORDER BY turn, due_at, ${sql.join(keys)}
      LIMIT ${window.batch}::int
    ), claimed AS (
      UPDATE ${sql.table(spec.table)} t
      SET ${lease} = ${window.leaseUntil}::timestamptz, ${token} = ${spec.token.next}${spec.alsoSet ? sql`, ${spec.alsoSet}` : sql``}
      FROM chosen
      WHERE (${keyOf('t')}) = (${keyOf('chosen')})
      RETURNING ${spec.returning}, t.${token} AS lease_token
    )
    ${spec.select ?? sql`SELECT * FROM claimed`}`.execute(db);
  return rows;
}

/** Lanes from a fixed list of keys and their free slots; each lane is its own turn key. */
export function lanesOf(free: Partial<Record<string, number>>): RawBuilder<unknown> {
  const lanes = Object.entries(free).filter((e): e is [string, number] => (e[1] ?? 0) > 0);
  if (lanes.length === 0) return sql`SELECT NULL::text AS lane_key, 0 AS free, NULL::text AS turn_key WHERE false`;
  const values = lanes.map(([key, n]) => sql`(${key}::text, ${n}::int)`);
  return sql`SELECT v.lane_key, v.free, v.lane_key AS turn_key FROM (VALUES ${sql.join(values)}) AS v(lane_key, free)`;
}

/** The sum of the lanes' free slots: a claim by fixed lanes takes at most that many. */
export function totalFree(free: Partial<Record<string, number>>): number {
  return Object.values(free).reduce<number>((n, f) => n + Math.max(0, f ?? 0), 0);
}

/** Work that is attempted until it succeeds or gives up (deliveries): pending, due at its next attempt, its attempt count the lease token. */
export const ATTEMPTED_WORK = {
  key: ['id'],
  dueColumn: 'next_attempt_at',
  token: { column: 'attempts', next: sql`t.attempts + 1` },
  pending: sql`status = 'pending'`,
} as const satisfies Partial<LeasedWorkSpec>;

/** A CTE `name (key, free)` of the keys with work in flight here and how many more each may start. */
export function freeSlotsCte(name: string, keyColumn: string, free: ReadonlyMap<string, number>): RawBuilder<unknown> {
  const json = JSON.stringify(Object.fromEntries(free));
  return sql`${sql.raw(name)} AS (SELECT key::uuid AS ${sql.ref(keyColumn)}, value::int AS free FROM jsonb_each_text(${json}::jsonb))`;
}
