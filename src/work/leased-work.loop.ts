import type { Job } from './job-runner.js';
import { createKeyedPool, type KeyedPool, type KeyedPoolOptions } from './keyed-pool.js';
import { createSerialPass } from './serial-pass.js';
import type { Logger } from '../domain/logger.port.js';
import type { DatabaseOutage } from '../db/database-outage.monitor.js';
import type { Clock } from '../domain/clock.port.js';

/** A lane's slots as its claim sees them: what is free, and the work holding the rest. */
export interface LaneSlots<W> {
  pool: KeyedPool;
  /** The work this lane runs now. */
  inFlight(): W[];
}

export interface ClaimResult<W> {
  claimed: W[];
  /**
   * Keys the claim gave every slot it offered them: more of their work may be due, so one of their
   * slots freeing claims again at once. Judged by what was offered, not by the slots free
   * afterwards, since work finishing meanwhile frees slots too.
   */
  saturated: Iterable<string>;
}

/** One lane of leased work: its slots, how it claims for them, and what one claimed item does. */
export interface WorkLane<W> {
  name: string;
  /** Slots per key (a ministry system, a webhook, a partner): fixed, read each time work may start, or shared with work outside the loop. */
  perKey: KeyedPoolOptions['perKey'];
  /** Slots overall. */
  total: number;
  keyOf(work: W): string;
  idOf(work: W): string;
  /**
   * Claims no more than the free slots (at `at`) allow. A lane whose slots are shared holds the
   * slots it offers (`pool.hold`) before it claims, so the work it claims always finds them.
   */
  claim(slots: LaneSlots<W>, at: Date): Promise<ClaimResult<W>>;
  /**
   * Does one claimed item; its lease hands the item back if this throws. True when it moved its
   * key to another lane (a webhook to the slow lane after a failed attempt, or back after a
   * success): that lane's claim may have run before the move and left the key's work behind, so
   * its slot freeing claims again.
   */
  perform(work: W): Promise<boolean | void>;
  /** What to log, and how loud, when `perform` throws for another reason than a database outage. */
  failure: { level: 'warn' | 'error'; message: string };
}

export interface LeasedWorkLoopDeps {
  name: string;
  /** How often a pass claims without being asked. */
  intervalMs: number;
  lanes: readonly WorkLane<unknown>[];
  log: Logger;
  /** Errors that only say the database is away are its to log (once per outage). */
  outage?: DatabaseOutage;
  /** Runs a pass as background work (WorkPriority), wherever the nudge came from. */
  background?: <T>(fn: () => Promise<T>) => Promise<T>;
  now: Clock;
  /** A pass (its claims) past this is abandoned by the job runner; see Job.deadlineMs. */
  passDeadlineMs?: number;
}

export interface LeasedWorkJob extends Job {
  /** New work may be due (a request just committed it): claim now, not at the next interval. */
  nudge(): void;
}

interface RunningLane {
  lane: WorkLane<unknown>;
  pool: KeyedPool;
  inFlight: Map<string, unknown>;
  saturated: Set<string>;
  /** Keys whose finished work moved them to another lane; their slot freeing claims again. */
  moved: Set<string>;
}

/** Starts claimed work in one of its lane's slots, and notes a key the work moved to another lane. */
function start(into: RunningLane, work: unknown, deps: Pick<LeasedWorkLoopDeps, 'name' | 'log'>): void {
  const id = into.lane.idOf(work);
  const key = into.lane.keyOf(work);
  into.inFlight.set(id, work);
  const started = into.pool.tryRun(key, async () => {
    try {
      if ((await into.lane.perform(work)) === true) into.moved.add(key);
    } finally {
      into.inFlight.delete(id);
    }
  });
  if (started) return;
  // The claim stayed within the free slots, so this is a bug; the lease hands the work back.
  into.inFlight.delete(id);
  deps.log.error({ id, job: deps.name, lane: into.lane.name }, 'claimed work found no free slot');
}

/**
 * Runs leased work beside its passes. A pass claims, lane by lane, only what each key has free
 * slots for, starts it and returns without waiting: a key whose work hangs holds its own slots
 * until its lease or timeout, never the next pass or another key's work. When a slot of a key the
 * last claim saturated frees, or work that moved its key to another lane finishes, the loop claims
 * again at once, so a backlog drains as fast as the work finishes instead of one batch per
 * interval. Passes never interleave, since each one's claim counts on the slots it saw. Safe on
 * any number of instances: the claims are leased.
 */
export function createLeasedWorkLoop(deps: LeasedWorkLoopDeps): LeasedWorkJob {
  const { now } = deps;
  const running: RunningLane[] = deps.lanes.map(runningLane);

  function runningLane(lane: WorkLane<unknown>): RunningLane {
    const self: RunningLane = {
      lane,
      inFlight: new Map(),
      saturated: new Set(),
      moved: new Set(),
      pool: createKeyedPool({
        perKey: lane.perKey,
        total: lane.total,
        onError: (err, key) => {
          if (!deps.outage?.absorb(err)) deps.log[lane.failure.level]({ err, key, job: deps.name, lane: lane.name }, lane.failure.message);
        },
        onFree: (key) => {
          if (self.moved.delete(key) || self.saturated.has(key)) nudge();
        },
      }),
    };
    return self;
  }

  async function pass(): Promise<void> {
    const at = now();
    for (const r of running) {
      try {
        const { claimed, saturated } = await r.lane.claim({ pool: r.pool, inFlight: () => [...r.inFlight.values()] }, at);
        claimed.forEach((work) => start(r, work, deps));
        r.saturated = new Set(saturated);
      } finally {
        // Slots the claim held and found no work for go back to whoever shares them.
        r.pool.dropHolds();
      }
    }
  }

  const passes = createSerialPass(pass);
  const nudge = () => {
    (deps.background ? deps.background(() => passes.now()) : passes.now()).catch((err: unknown) => {
      if (!deps.outage?.absorb(err)) deps.log.error({ err, job: deps.name }, 'job pass failed');
    });
  };
  const idle = () => Promise.all(running.map((r) => r.pool.idle()));

  return {
    name: deps.name,
    intervalMs: deps.intervalMs,
    deadlineMs: deps.passDeadlineMs,
    run: () => passes.now(),
    abandon: () => passes.abandon(),
    nudge,
    async drain() {
      while (passes.busy() || running.some((r) => r.inFlight.size > 0)) {
        await passes.idle();
        await idle();
      }
    },
    async stop() {
      await passes.stop();
      await idle();
    },
  };
}
