import { sql, type Kysely } from 'kysely';
import type { Database } from '../db.types.js';
import { pgErrorCode } from '../pg-error.js';
import { addMonths, expiredPartitions, legacyPartitionName, missingMonths, monthPartitionName, monthStart, parsePartitionBound, type PartitionRange } from '../../domain/partition-months.js';

/** The database handle, named here rather than imported from database.ts, which runs the move: no import cycle. */
type Db = Kysely<Database>;

/**
 * The tables that only grow, partitioned by month on created_at. A delivery and a push are
 * written with their event's created_at, so an event, its deliveries and its pushes share a month
 * and leave together; attempts have a month of their own (they are kept for less time).
 */
export const PARTITIONED_TABLES = ['events', 'webhook_deliveries', 'webhook_attempts', 'push_deliveries'] as const;
export type PartitionedTable = (typeof PARTITIONED_TABLES)[number];

/** The current month and the two after it always have their partitions. */
export const MONTHS_AHEAD = 3;

/** Literals, not parameters: the planner matches them to the partial index on unfinished deliveries. */
const unfinishedDelivery = (alias = '') => sql.raw(`${alias}status NOT IN ('delivered', 'failed', 'canceled')`);

export interface PartitionRetention {
  /** Months of events, deliveries and pushes wholly before this go, unless a delivery or push of theirs is unfinished. */
  eventsBefore: Date;
  /** Months of attempts wholly before this go, unless one of them belongs to an unfinished delivery. */
  attemptsBefore: Date;
}

export interface PartitionPass {
  created: string[];
  dropped: string[];
  /** Expired partitions kept because rows in them are still needed; the next pass looks again. */
  kept: string[];
}

/** The tables as they were before partitioning, where they are still partitions: their rows go row by row. */
export interface LegacyTables {
  events: string | null;
  deliveries: string | null;
  attempts: string | null;
  pushes: string | null;
}

interface Partition extends PartitionRange {
  /** A DETACH ... CONCURRENTLY that did not finish (the process ended mid-way): FINALIZE completes it. */
  detaching: boolean;
}

const iso = (at: Date) => sql.lit(at.toISOString());

/**
 * The catalog side of monthly partitions: which exist, creating the months ahead, and retention by
 * detaching and dropping whole months instead of deleting rows. Every statement is safe to run
 * from several instances at once: a partition another instance created or dropped first is taken
 * as done.
 */
export function createPartitionRepository(db: Db) {
  async function partitionsOf(table: PartitionedTable): Promise<Partition[]> {
    const { rows } = await sql<{ name: string; bound: string; detaching: boolean }>`
      SELECT c.relname AS name, pg_get_expr(c.relpartbound, c.oid) AS bound, i.inhdetachpending AS detaching
      FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
      WHERE i.inhparent = to_regclass(${table})`.execute(db);
    const parts: Partition[] = [];
    for (const r of rows) {
      const range = parsePartitionBound(r.name, r.bound);
      if (!range) throw new Error(`partition ${r.name} of ${table} has a bound this code cannot read: ${r.bound}`);
      parts.push({ ...range, detaching: r.detaching });
    }
    return parts;
  }

  async function databaseNow(): Promise<Date> {
    const { rows } = await sql<{ now: Date }>`SELECT now() AS now`.execute(db);
    const at = rows[0]?.now;
    if (!at) throw new Error('the database did not say what time it is');
    return new Date(at);
  }

  /** Creates the months [first, first + count) of `table` that no partition covers; returns the names created. */
  async function createMonths(table: PartitionedTable, first: Date, count: number): Promise<string[]> {
    const created: string[] = [];
    for (const month of missingMonths(await partitionsOf(table), monthStart(first), count)) {
      const name = monthPartitionName(table, month);
      try {
        await sql`CREATE TABLE IF NOT EXISTS ${sql.table(name)} PARTITION OF ${sql.table(table)} FOR VALUES FROM (${iso(month)}) TO (${iso(addMonths(month, 1))})`.execute(db);
        created.push(name);
      } catch (err) {
        // 42P07: another instance created it between our look and our statement.
        if (pgErrorCode(err) !== '42P07') throw err;
      }
    }
    return created;
  }

  async function exists(query: ReturnType<typeof sql<{ found: boolean }>>): Promise<boolean> {
    const { rows } = await query.execute(db);
    return rows[0]?.found === true;
  }

  function inRange(p: PartitionRange) {
    return p.from ? sql`created_at >= ${p.from}::timestamptz AND created_at < ${p.to}::timestamptz` : sql`created_at < ${p.to}::timestamptz`;
  }

  /** An event's month still needed: one of its deliveries or pushes is not finished. */
  function eventMonthInUse(p: PartitionRange): Promise<boolean> {
    return exists(sql<{ found: boolean }>`SELECT
      EXISTS (SELECT 1 FROM webhook_deliveries WHERE ${unfinishedDelivery()} AND ${inRange(p)})
      OR EXISTS (SELECT 1 FROM push_deliveries WHERE status = 'pending' AND ${inRange(p)}) AS found`);
  }

  /** An attempts partition still needed: an attempt in it belongs to a delivery not finished (the few unfinished ones are looked at, by the partial index). */
  function attemptMonthInUse(p: PartitionRange): Promise<boolean> {
    return exists(sql<{ found: boolean }>`SELECT EXISTS (
      SELECT 1 FROM webhook_deliveries d
      WHERE ${unfinishedDelivery('d.')} AND EXISTS (SELECT 1 FROM ${sql.table(p.name)} a WHERE a.delivery_id = d.id)) AS found`);
  }

  /**
   * Detaches without blocking the table's readers and writers, then drops. A detach left half-way
   * by an ended process is finalized. False when another instance got there first.
   */
  async function dropPartition(table: PartitionedTable, p: Partition): Promise<boolean> {
    try {
      if (p.detaching) await sql`ALTER TABLE ${sql.table(table)} DETACH PARTITION ${sql.table(p.name)} FINALIZE`.execute(db);
      else await sql`ALTER TABLE ${sql.table(table)} DETACH PARTITION ${sql.table(p.name)} CONCURRENTLY`.execute(db);
    } catch (err) {
      // 42P01: dropped already; 42P16 / 55000: not (or no longer) a partition of it, or another detach under way.
      if (['42P01', '42P16', '55000'].includes(pgErrorCode(err) ?? '')) return false;
      throw err;
    }
    await sql`DROP TABLE IF EXISTS ${sql.table(p.name)}`.execute(db);
    return true;
  }

  return {
    partitionsOf,
    createMonths,
    databaseNow,

    /** The months ahead of every partitioned table, by the database's clock (the one rows are stamped with). */
    async createAhead(): Promise<string[]> {
      const now = await databaseNow();
      const created: string[] = [];
      for (const table of PARTITIONED_TABLES) created.push(...(await createMonths(table, now, MONTHS_AHEAD)));
      return created;
    },

    /**
     * Drops the partitions wholly past retention whose rows nothing needs any more: pushes and
     * deliveries before their events (nothing refers to a row that is gone), attempts on their own
     * clock. A partition kept now is looked at again by the next pass.
     */
    async dropExpired(retention: PartitionRetention): Promise<Omit<PartitionPass, 'created'>> {
      const dropped: string[] = [];
      const kept: string[] = [];
      // Rows are stamped by the database's clock: whatever the service's says, the month it writes in stays.
      const current = monthStart(await databaseNow());
      const before = (cutoff: Date) => new Date(Math.min(cutoff.getTime(), current.getTime()));
      const months = new Map<number, Partition[]>();
      for (const table of ['push_deliveries', 'webhook_deliveries', 'events'] as const) {
        for (const p of expiredPartitions(await partitionsOf(table), before(retention.eventsBefore))) {
          const key = p.to?.getTime() ?? 0;
          months.set(key, [...(months.get(key) ?? []), p]);
        }
      }
      for (const [to, parts] of months) {
        // One look for the month's events, deliveries and pushes, over the widest of their ranges.
        const froms = parts.map((p) => p.from);
        const from = froms.includes(null) ? null : new Date(Math.min(...froms.map((f) => f?.getTime() ?? 0)));
        if (await eventMonthInUse({ name: '', from, to: new Date(to) })) {
          kept.push(...parts.map((p) => p.name));
          continue;
        }
        for (const p of parts) {
          const table = PARTITIONED_TABLES.find((t) => p.name.startsWith(`${t}_`));
          if (table && (await dropPartition(table, p))) dropped.push(p.name);
        }
      }
      for (const p of expiredPartitions(await partitionsOf('webhook_attempts'), before(retention.attemptsBefore))) {
        const inUse = await attemptMonthInUse(p).catch((err: unknown) => {
          // 42P01: another instance dropped it since we listed it.
          if (pgErrorCode(err) === '42P01') return null;
          throw err;
        });
        if (inUse) kept.push(p.name);
        else if (inUse === false && (await dropPartition('webhook_attempts', p))) dropped.push(p.name);
      }
      return { dropped, kept };
    },

    async legacyTables(): Promise<LegacyTables> {
      const names = PARTITIONED_TABLES.map(legacyPartitionName);
      const { rows } = await sql<{ name: string }>`SELECT relname AS name FROM pg_class WHERE oid = ANY(ARRAY[${sql.join(names.map((n) => sql`to_regclass(${n})`))}]::regclass[])`.execute(db);
      const have = new Set(rows.map((r) => r.name));
      const of = (t: PartitionedTable) => (have.has(legacyPartitionName(t)) ? legacyPartitionName(t) : null);
      return { events: of('events'), deliveries: of('webhook_deliveries'), attempts: of('webhook_attempts'), pushes: of('push_deliveries') };
    },
  };
}

export type PartitionRepository = ReturnType<typeof createPartitionRepository>;
