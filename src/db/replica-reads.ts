import { sql, type KyselyPlugin, type PluginTransformQueryArgs, type PluginTransformResultArgs, type QueryResult, type RootOperationNode, type UnknownRow } from 'kysely';
import type { Db } from './database.js';
import type { Logger } from '../domain/logger.port.js';

/** Where a routed read ran. */
export type ReadTarget = 'replica' | 'primary';

export interface ReplicaReadsOptions {
  primary: Db;
  replica: Db;
  /** Reads go to the replica only while its measured replay lag is below this (REPLICA_MAX_LAG_MS). */
  maxLagMs: number;
  /** How often the lag is measured (REPLICA_PROBE_MS). */
  probeMs: number;
  log: Logger;
  /** Each routed query, by where it ran. */
  onRead?: (target: ReadTarget) => void;
  /** Each measurement, in ms; null when the replica did not answer. */
  onLag?: (lagMs: number | null) => void;
}

function withinMs<T>(work: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
  });
  return Promise.race([work, late]).finally(() => clearTimeout(timer));
}

/** Counts each query of the Kysely instance it is added to: every statement built or raw goes through transformQuery. */
function counting(count: () => void): KyselyPlugin {
  return {
    transformQuery(args: PluginTransformQueryArgs): RootOperationNode {
      count();
      return args.node;
    },
    transformResult(args: PluginTransformResultArgs): Promise<QueryResult<UnknownRow>> {
      return Promise.resolve(args.result);
    },
  };
}

/**
 * The standby's replay lag: nothing to replay is no lag, however long ago the last transaction
 * was; otherwise the time since the last one it replayed. A standby that stopped replaying while
 * the primary writes on falls behind by the wall clock, which is what the guard must see.
 */
const LAG_QUERY = sql<{ lag_ms: number | string | null }>`
  SELECT CASE WHEN pg_last_wal_receive_lsn() IS NOT DISTINCT FROM pg_last_wal_replay_lsn() THEN 0
    ELSE extract(epoch FROM now() - pg_last_xact_replay_timestamp()) * 1000 END AS lag_ms`;

/**
 * The database the heavy reads run on: the replica while its replay lag, measured every
 * `probeMs`, is below `maxLagMs`, and the primary otherwise (also until the first measurement,
 * and whenever the replica does not answer). The answer is a Db whose every query is sent to the
 * one chosen at that moment, so a repository built on it needs nothing of its own; only
 * repositories that never write and never read their own writes are built on it.
 */
export function createReplicaReads(opts: ReplicaReadsOptions) {
  const primary = opts.primary.withPlugin(counting(() => opts.onRead?.('primary')));
  const replica = opts.replica.withPlugin(counting(() => opts.onRead?.('replica')));
  let current: ReadTarget = 'primary';
  let stopped = false;
  let probing: Promise<void> | null = null;

  function choose(target: ReadTarget, lagMs: number | null, err: unknown): void {
    if (target === current) return;
    current = target;
    if (target === 'primary') opts.log.warn({ lagMs, maxLagMs: opts.maxLagMs, err }, 'replica lagging: routed reads go to the primary');
    else opts.log.info({ lagMs, maxLagMs: opts.maxLagMs }, 'replica caught up: routed reads go to the replica');
  }

  async function probe(): Promise<void> {
    let lagMs: number | null = null;
    let failure: unknown;
    try {
      // A silent replica (a failover that never closed the socket) must not hold reads on it.
      const { rows } = await withinMs(LAG_QUERY.execute(opts.replica), opts.maxLagMs);
      const value = Number(rows[0]?.lag_ms);
      lagMs = Number.isFinite(value) ? Math.max(0, value) : null;
    } catch (err) {
      failure = err;
    }
    if (stopped) return;
    opts.onLag?.(lagMs);
    choose(lagMs !== null && lagMs < opts.maxLagMs ? 'replica' : 'primary', lagMs, failure);
  }

  const timer = setInterval(() => {
    probing ??= probe().finally(() => {
      probing = null;
    });
  }, opts.probeMs);
  timer.unref();

  const reads = new Proxy(primary, {
    get(_target, prop) {
      const db = current === 'replica' ? replica : primary;
      const value: unknown = Reflect.get(db, prop, db);
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(db) : value;
    },
  });

  return {
    reads,
    /** Where routed reads go now. */
    target: (): ReadTarget => current,
    async stop(): Promise<void> {
      stopped = true;
      clearInterval(timer);
      await probing;
      await opts.replica.destroy();
    },
  };
}

export type ReplicaReads = ReturnType<typeof createReplicaReads>;
