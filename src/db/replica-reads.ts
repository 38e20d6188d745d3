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

const PRIMARY_LSN = sql<{ lsn: string }>`SELECT pg_current_wal_lsn()::text AS lsn`;
const REPLAYED_LSN = sql<{ lsn: string | null }>`SELECT pg_last_wal_replay_lsn()::text AS lsn`;

/** A WAL position, `16/B374D848`, as a number that orders like it. */
export function lsnValue(text: string): bigint {
  const [hi, lo] = text.split('/');
  if (hi === undefined || lo === undefined || !/^[0-9A-Fa-f]{1,8}$/.test(hi) || !/^[0-9A-Fa-f]{1,8}$/.test(lo)) throw new Error(`not a WAL position: ${text}`);
  return (BigInt(`0x${hi}`) << 32n) | BigInt(`0x${lo}`);
}

/** The most primary positions kept while the replica does not replay; past it the oldest stays, so the lag is never understated. */
const MAX_SAMPLES = 1000;

/**
 * The replica's replay lag in time, from the primary's WAL position at each measurement: the lag
 * is how long ago the primary held a position the replica has still not replayed, and none when
 * it has replayed everything the primary held. PostgreSQL's own `now() -
 * pg_last_xact_replay_timestamp()` reads a quiet spell as lag the moment the next write arrives,
 * and would send reads to the primary on every write after one.
 */
export function createLagTracker() {
  const samples: { at: number; lsn: bigint }[] = [];
  return {
    /** The primary was at `primaryLsn` at `at` (monotonic ms), and the replica has replayed up to `replayedLsn` since. */
    observe(at: number, primaryLsn: bigint, replayedLsn: bigint): number {
      samples.push({ at, lsn: primaryLsn });
      while (samples.length > 0 && (samples[0]?.lsn ?? 0n) <= replayedLsn) samples.shift();
      if (samples.length > MAX_SAMPLES) samples.splice(1, 1);
      const oldest = samples[0];
      return oldest ? at - oldest.at : 0;
    },
  };
}

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
  const lag = createLagTracker();
  const elapsed = () => performance.now();

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
      const at = elapsed();
      const [{ rows: held }, { rows: replayed }] = await withinMs(Promise.all([PRIMARY_LSN.execute(opts.primary), REPLAYED_LSN.execute(opts.replica)]), opts.maxLagMs);
      const replayedAt = replayed[0]?.lsn;
      const primaryAt = held[0]?.lsn;
      if (!replayedAt || !primaryAt) throw new Error('the replica is not replaying (not a standby)');
      lagMs = lag.observe(at, lsnValue(primaryAt), lsnValue(replayedAt));
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
