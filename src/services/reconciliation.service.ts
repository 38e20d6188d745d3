import { isFinanceDay, financeDayBounds, financeDayOf, minutesIntoFinanceDay, previousFinanceDay } from '../domain/finance-day.js';
import { entriesById, judgeEntry } from '../domain/reconciliation.js';
import { InvalidRequestError } from '../domain/errors.js';
import { SOURCES, type Source, type StaleLeaseReport } from '../domain/vocabulary.js';
import type { MinistryAdapters, SettlementEntry } from '../domain/ministry.port.js';
import type { DiscrepancyWrite, LocalSettled, ReconciliationLease, ReconciliationRepository, RunRow } from '../db/repositories/reconciliation.repository.js';
import type { SourceOutcome } from '../db/db.types.js';
import type { AuditRepository } from '../db/repositories/audit.repository.js';
import type { PaymentResolver } from '../payments/payments.module.js';
import type { Logger } from '../domain/logger.port.js';
import type { Clock } from '../domain/clock.port.js';
import { runTotals } from './reconciliation.view.js';

export interface ReconciliationSettings {
  /** Time of the Mongolian day (minutes after midnight) from which the previous day is reconciled. */
  scheduleAtMinutes: number;
  /** A source that could not be reconciled is tried again this long after. */
  retryMs: number;
  /** How long one instance holds a day and source; renewed while it works through the day. */
  leaseMs: number;
  /** How long an operator's run waits for another instance's run of the same day and source. */
  waitMs: number;
}

export interface ReconciliationDeps {
  reconciliations: ReconciliationRepository;
  ministries: MinistryAdapters;
  resolver: Pick<PaymentResolver, 'confirm'>;
  audit: AuditRepository;
  settings: ReconciliationSettings;
  log: Logger;
  now: Clock;
  /** Called when a reconciliation confirmed payments (their outbox rows wait for delivery). */
  onConfirmed?: () => void;
  /** A run outlived its lease and another instance took the day and source: its writes were refused. */
  onStaleLease?: StaleLeaseReport;
}

/** This instance's hold of a day and source ran out and another instance took it. */
class LeaseLostError extends Error {
  constructor() {
    super('the lease on this day and source was lost to another instance');
  }
}

/** Local payments are read in pages of this many: a busy day does not load at once. */
const PAGE = 1000;
const WAIT_STEP_MS = 100;
/** Due day-and-source pairs one scheduled pass takes on. */
const DUE_PER_PASS = 6;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function chunks<T>(items: T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

interface Tally {
  matched: number;
  autoConfirmed: number;
  found: DiscrepancyWrite[];
}

function finding(kind: DiscrepancyWrite['kind'], day: string, source: Source, entry: SettlementEntry | null, local: LocalSettled | null): DiscrepancyWrite {
  return {
    kind,
    financeDay: day,
    source,
    refNum: entry?.refNum ?? local?.ref_num ?? '',
    paymentId: entry?.paymentId ?? local?.id ?? '',
    partnerId: local?.partner_id ?? null,
    localAmount: local?.amount ?? null,
    ministryAmount: entry?.amount ?? null,
  };
}

/** Told each time a run renews its lease: the job's deadline counts from the last renewal. */
type OnProgress = () => void;

async function autoConfirm(deps: ReconciliationDeps, local: LocalSettled, entry: SettlementEntry, day: string): Promise<boolean> {
  const settledAt = new Date(entry.date);
  const paidAt = Number.isNaN(settledAt.getTime()) ? deps.now() : settledAt;
  const detail = { ministry: 'settled', financeDay: day, settledAmount: entry.amount, settledAt: entry.date };
  return deps.resolver.confirm(local, local.ref_num, paidAt, { cause: 'reconciliation', detail });
}

/** `renew` runs before each ministry call that needs it: a large day's auto-confirmations must not outlive the lease. */
async function judgeSettled(
  deps: ReconciliationDeps,
  day: string,
  source: Source,
  entries: Map<string, SettlementEntry>,
  tally: Tally,
  renew: () => Promise<void>,
): Promise<void> {
  const repo = deps.reconciliations;
  for (const ids of chunks([...entries.keys()], PAGE)) {
    const locals = new Map((await repo.paymentsByIds(ids)).filter((p) => p.source === source).map((p) => [p.id, p]));
    for (const id of ids) {
      const entry = entries.get(id);
      if (!entry) continue;
      let local = locals.get(id) ?? null;
      let verdict = judgeEntry(local, entry.amount);
      if (verdict.autoConfirm && local) {
        await renew();
        if (await autoConfirm(deps, local, entry, day)) tally.autoConfirmed += 1;
        else {
          // Another actor moved it first: judge what it is now.
          local = (await repo.paymentsByIds([id]))[0] ?? null;
          verdict = { ...judgeEntry(local, entry.amount), autoConfirm: false };
        }
      }
      if (verdict.matched) tally.matched += 1;
      for (const kind of verdict.discrepancies) tally.found.push(finding(kind, day, source, entry, local));
    }
  }
}

/** Payments confirmed here for the day that the ministry's settlement does not list. */
async function findUnsettled(
  deps: ReconciliationDeps,
  day: string,
  source: Source,
  entries: Map<string, SettlementEntry>,
  tally: Tally,
  renew: () => Promise<void>,
): Promise<void> {
  const { from, to } = financeDayBounds(day);
  let after: { paidAt: Date; id: string } | null = null;
  for (;;) {
    const page = await deps.reconciliations.confirmedBetween(source, from, to, after, PAGE);
    for (const local of page) {
      if (!entries.has(local.id)) tally.found.push(finding('missing_at_ministry', day, source, null, local));
    }
    const last = page.at(-1);
    if (!last || page.length < PAGE || !last.paid_at) return;
    after = { paidAt: last.paid_at, id: last.id };
    await renew();
  }
}

/** One source's reconciliation of a day, under a lease this instance holds: what matched, what was confirmed, what disagrees. */
async function reconcileSource(deps: ReconciliationDeps, lease: ReconciliationLease, runId: string, onProgress: OnProgress): Promise<SourceOutcome> {
  const { now } = deps;
  const repo = deps.reconciliations;
  const { financeDay: day, source } = lease;
  const tally: Tally = { matched: 0, autoConfirmed: 0, found: [] };
  let renewedAt = Date.now();
  const renew = async () => {
    if (!(await repo.renewLease(lease, new Date(now().getTime() + deps.settings.leaseMs)))) throw new LeaseLostError();
    renewedAt = Date.now();
    onProgress();
  };
  // Renewing before every call would cost a write per payment; half the lease left is room for the next call.
  const renewWhenHalfGone = async () => {
    if (Date.now() - renewedAt >= deps.settings.leaseMs / 2) await renew();
  };
  const settled = await deps.ministries[source].settlement(day);
  const entries = entriesById(settled);
  await renew();
  await judgeSettled(deps, day, source, entries, tally, renewWhenHalfGone);
  await renew();
  await findUnsettled(deps, day, source, entries, tally, renew);
  if (!(await repo.recordFindings(lease, runId, tally.found, now()))) throw new LeaseLostError();
  return { source, status: 'completed', matched: tally.matched, autoConfirmed: tally.autoConfirmed, discrepancies: tally.found.length, error: null };
}

/**
 * Reconciles one source whose lease this instance holds, and hands the lease back. A holder that
 * stalled past its lease and lost it to another instance stops at its next write, recording
 * nothing and releasing nothing: the day and source are the new holder's.
 */
async function runHeld(deps: ReconciliationDeps, lease: ReconciliationLease, runId: string, onProgress: OnProgress): Promise<SourceOutcome> {
  const { financeDay: day, source } = lease;
  let outcome: SourceOutcome;
  try {
    outcome = await reconcileSource(deps, lease, runId, onProgress);
  } catch (err) {
    const lost = err instanceof LeaseLostError;
    if (lost) deps.onStaleLease?.('reconciliation', `${day}/${source}`);
    else deps.log.warn({ err, financeDay: day, source }, 'reconciliation of a source failed; it will be retried');
    const error = err instanceof Error ? err.message : String(err);
    outcome = { source, status: 'failed', matched: 0, autoConfirmed: 0, discrepancies: 0, error };
    if (lost) return outcome;
  }
  const at = deps.now();
  if (!(await deps.reconciliations.release(lease, { now: at, error: outcome.error, retryAt: new Date(at.getTime() + deps.settings.retryMs) }))) {
    deps.onStaleLease?.('reconciliation', `${day}/${source}`);
  }
  return outcome;
}

/** Waits (up to the configured time) for another instance's run of the same day and source. */
async function acquireWaiting(deps: ReconciliationDeps, day: string, source: Source): Promise<ReconciliationLease | null> {
  const { now } = deps;
  const deadline = Date.now() + deps.settings.waitMs;
  for (;;) {
    const lease = await deps.reconciliations.acquire(day, source, now(), new Date(now().getTime() + deps.settings.leaseMs));
    if (lease || Date.now() >= deadline) return lease;
    await sleep(WAIT_STEP_MS);
  }
}

/** A run of a day's sources, each under its lease, recorded as one run. */
async function runSources(
  deps: ReconciliationDeps,
  day: string,
  sources: readonly (Source | ReconciliationLease)[],
  operator: string | null,
  onProgress: OnProgress,
): Promise<RunRow> {
  const { now } = deps;
  const repo = deps.reconciliations;
  const runId = await repo.createRun(day, operator, now());
  // One source after another: a busy day's settlement is tens of MB of JSON to parse (see
  // MINISTRY_MAX_RESPONSE_BYTES), and three at once would not fit the production heap.
  const outcomes: SourceOutcome[] = [];
  for (const wanted of sources) {
    const lease = typeof wanted === 'string' ? await acquireWaiting(deps, day, wanted) : wanted;
    outcomes.push(
      lease
        ? await runHeld(deps, lease, runId, onProgress)
        : { source: wanted as Source, status: 'failed', matched: 0, autoConfirmed: 0, discrepancies: 0, error: 'another instance is reconciling this day and source' },
    );
  }
  const run = await repo.finishRun(runId, outcomes.every((o) => o.status === 'completed') ? 'completed' : 'partial', outcomes, now());
  if (run.auto_confirmed > 0) deps.onConfirmed?.();
  return run;
}

/**
 * Daily reconciliation: each ministry system's settlement for a finance day against the payments
 * this service confirmed, tied by payment id. Settled payments still `submitted` here are
 * confirmed through the state machine; every disagreement is stored as a discrepancy, once.
 */
export function createReconciliationService(deps: ReconciliationDeps) {
  const { now } = deps;
  const repo = deps.reconciliations;
  let progressAt = 0;
  const onProgress: OnProgress = () => (progressAt = Date.now());

  return {
    /** When a run here last renewed its lease (epoch ms; 0 before any). */
    lastProgressAt: () => progressAt,

    /** An operator's run of every source for the day, now; waits for a run of the same day elsewhere. */
    async run(financeDay: string, operator: string): Promise<RunRow> {
      if (!isFinanceDay(financeDay)) throw new InvalidRequestError(['financeDay must be a date YYYY-MM-DD'], '/financeDay');
      if (financeDay > financeDayOf(now())) throw new InvalidRequestError(['financeDay must not be in the future'], '/financeDay');
      await repo.ensureSources(financeDay, SOURCES, now());
      const run = await runSources(deps, financeDay, SOURCES, operator, onProgress);
      await deps.audit.record({
        operator,
        action: 'reconciliation.run',
        targetType: 'reconciliation',
        targetId: run.id,
        before: null,
        after: runTotals(run),
        at: now(),
      });
      return run;
    },

    /**
     * One scheduled pass: from the configured time of day on, the previous finance day is due;
     * sources not yet reconciled (a new day, or one that failed) are taken when due, by one
     * instance each.
     */
    async runDue(): Promise<RunRow[]> {
      const at = now();
      if (minutesIntoFinanceDay(at) >= deps.settings.scheduleAtMinutes) await repo.ensureSources(previousFinanceDay(at), SOURCES, at);
      const byDay = new Map<string, ReconciliationLease[]>();
      for (const lease of await repo.claimDue(at, new Date(at.getTime() + deps.settings.leaseMs), DUE_PER_PASS)) {
        byDay.set(lease.financeDay, [...(byDay.get(lease.financeDay) ?? []), lease]);
      }
      const runs: RunRow[] = [];
      for (const [day, leases] of byDay) runs.push(await runSources(deps, day, leases, null, onProgress));
      return runs;
    },
  };
}

export type ReconciliationService = ReturnType<typeof createReconciliationService>;
