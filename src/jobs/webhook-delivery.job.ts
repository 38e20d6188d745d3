import type { Job } from './job-runner.js';
import { createKeyedPool, type KeyedPool } from './keyed-pool.js';
import { createSerialPass } from './serial-pass.js';
import {
  partnerShare,
  type ClaimedDelivery,
  type ClaimLimits,
  type DeliveryLane,
  type WebhookDeliveryRepository,
} from '../db/repositories/webhook-delivery.repository.js';
import type { WebhookDeliveryService } from '../services/webhook-delivery.service.js';
import type { Logger } from '../domain/logger.port.js';
import type { DatabaseOutage } from '../db/database-outage.monitor.js';
import { systemClock, type Clock } from '../domain/clock.port.js';

/** Time a claim stays ours beyond the request timeout, for recording the outcome. */
const LEASE_MARGIN_MS = 30_000;

/** A webhook in the slow lane is sent one attempt at a time: a receiver that hangs gets no second one meanwhile. */
const SLOW_PER_ENDPOINT = 1;

/** Attempts in flight in one instance, in the normal lane. */
export interface WebhookConcurrency {
  total: number;
  /** Per webhook registration (webhook_id). */
  perEndpoint: number;
  /** Per partner, over all of its webhooks: several registrations to one broken host share it. */
  perPartner: number;
}

export interface WebhookDeliveryJobDeps {
  deliveries: WebhookDeliveryRepository;
  service: WebhookDeliveryService;
  intervalMs: number;
  timeoutMs: number;
  concurrency: WebhookConcurrency;
  /** Attempts in flight in one instance to webhooks whose last attempt failed or timed out. */
  slowConcurrency: number;
  log: Logger;
  /** Errors that only say the database is away are its to log (once per outage). */
  outage?: DatabaseOutage;
  /** Runs a pass as background work (WorkPriority), wherever the nudge came from. */
  background?: <T>(fn: () => Promise<T>) => Promise<T>;
  now?: Clock;
}

/** One lane's slots here and the attempts holding them. */
interface Lane {
  name: DeliveryLane;
  pool: KeyedPool;
  perEndpoint: number;
  capacity: number;
  inFlight: Map<string, ClaimedDelivery>;
  /**
   * Endpoints the last pass left without a free slot in this lane (their own, their partner's,
   * their partner's share or the lane's): more of their deliveries may be due, so a freed slot
   * claims again at once.
   */
  saturated: Set<string>;
}

function countBy(claims: Iterable<ClaimedDelivery>, key: (c: ClaimedDelivery) => string): Map<string, number> {
  const counts = new Map<string, number>();
  for (const c of claims) counts.set(key(c), (counts.get(key(c)) ?? 0) + 1);
  return counts;
}

function freeOf(counts: Map<string, number>, cap: number): Map<string, number> {
  return new Map([...counts].map(([key, n]) => [key, Math.max(0, cap - n)]));
}

/**
 * The endpoints a claim gave every slot it offered them (their own, their partner's, their
 * partner's share or the overall limit): judged by what was offered, not by the slots free
 * afterwards, since attempts finishing meanwhile free slots too.
 */
function saturatedEndpoints(busy: ClaimedDelivery[], claimed: ClaimedDelivery[], limits: ClaimLimits, capacity: number): Set<string> {
  const perEndpoint = countBy(claimed, (c) => c.webhookId);
  const perPartner = countBy(claimed, (c) => c.partnerId);
  const busyPerPartner = countBy(busy, (c) => c.partnerId);
  const share = partnerShare(capacity, busyPerPartner.size);
  const totalHit = claimed.length >= limits.total;
  return new Set(
    busy
      .filter(
        (c) =>
          totalHit ||
          (perEndpoint.get(c.webhookId) ?? 0) >= (limits.endpointFree.get(c.webhookId) ?? limits.perEndpoint) ||
          (perPartner.get(c.partnerId) ?? 0) >= (limits.partnerFree.get(c.partnerId) ?? limits.perPartner) ||
          (busyPerPartner.get(c.partnerId) ?? 0) >= share,
      )
      .map((c) => c.webhookId),
  );
}

/**
 * Delivers due webhook deliveries. A pass claims only as many rows of each endpoint and partner
 * as they have free slots here, starts the attempts and returns without waiting for them: a
 * hanging receiver holds its own slots until its timeout, never the next pass or another
 * partner's deliveries. A freed slot claims again at once while there is work, so a fast
 * receiver takes a backlog as fast as it answers. Rows are claimed with SKIP LOCKED and a lease, so any number of
 * instances can run this at once and each attempt is made by one of them.
 *
 * Webhooks whose last attempt failed or timed out are claimed in a slow lane of their own slots,
 * one attempt per webhook, so they never hold the slots of the healthy ones; in each lane a
 * partner holds at most its share of the slots (partnerShare), which also covers receivers that
 * hang before any attempt of theirs has timed out.
 */
export interface WebhookDeliveryJob extends Job {
  /** New deliveries may be due (a confirmation just committed its outbox row): claim now, not at the next interval. */
  nudge(): void;
}

export function createWebhookDeliveryJob(deps: WebhookDeliveryJobDeps): WebhookDeliveryJob {
  const now = deps.now ?? systemClock;
  const { concurrency } = deps;

  function lane(name: DeliveryLane, perEndpoint: number, capacity: number): Lane {
    const self: Lane = {
      name,
      perEndpoint,
      capacity,
      inFlight: new Map(),
      saturated: new Set(),
      pool: createKeyedPool({
        perKey: perEndpoint,
        total: capacity,
        // An unrecorded attempt is retried when its lease runs out.
        onError: (err, webhookId) => {
          if (!deps.outage?.absorb(err)) deps.log.error({ err, webhookId }, 'webhook attempt could not be recorded');
        },
        onFree: (webhookId) => {
          if (self.saturated.has(webhookId)) nudge();
        },
      }),
    };
    return self;
  }
  const lanes = [lane('normal', concurrency.perEndpoint, concurrency.total), lane('slow', SLOW_PER_ENDPOINT, deps.slowConcurrency)];

  function start(into: Lane, claim: ClaimedDelivery): void {
    into.inFlight.set(claim.id, claim);
    const started = into.pool.tryRun(claim.webhookId, async () => {
      try {
        await deps.service.attempt(claim);
      } finally {
        into.inFlight.delete(claim.id);
      }
    });
    if (started) return;
    // The claim stayed within the free slots, so this is a bug; the lease hands the row back.
    into.inFlight.delete(claim.id);
    deps.log.error({ deliveryId: claim.id, webhookId: claim.webhookId, lane: into.name }, 'claimed webhook delivery found no free slot');
  }

  async function claim(from: Lane, at: Date, leaseUntil: Date): Promise<void> {
    const running = [...from.inFlight.values()];
    const limits: ClaimLimits = {
      lane: from.name,
      total: from.pool.free(),
      perEndpoint: from.perEndpoint,
      perPartner: concurrency.perPartner,
      endpointFree: freeOf(countBy(running, (c) => c.webhookId), from.perEndpoint),
      partnerFree: freeOf(countBy(running, (c) => c.partnerId), concurrency.perPartner),
      capacity: from.capacity,
    };
    const claimed = await deps.deliveries.claimDue(at, leaseUntil, limits);
    claimed.forEach((c) => start(from, c));
    from.saturated = saturatedEndpoints([...running, ...claimed], claimed, limits, from.capacity);
  }

  async function pass(): Promise<void> {
    const at = now();
    const leaseUntil = new Date(at.getTime() + deps.timeoutMs + LEASE_MARGIN_MS);
    for (const l of lanes) await claim(l, at, leaseUntil);
  }

  // Passes never interleave: each one's limits assume no other claim is being started.
  const passes = createSerialPass(pass);
  // A nudge comes from a request (a confirmation, a redelivery); the pass it starts is background work.
  const nudge = () => {
    (deps.background ? deps.background(() => passes.now()) : passes.now()).catch((err: unknown) => {
      if (!deps.outage?.absorb(err)) deps.log.error({ err, job: 'webhook-delivery' }, 'job pass failed');
    });
  };

  return {
    name: 'webhook-delivery',
    intervalMs: deps.intervalMs,
    run: () => passes.now(),
    nudge,
    async drain() {
      while (passes.busy() || lanes.some((l) => l.inFlight.size > 0)) {
        await passes.idle();
        await Promise.all(lanes.map((l) => l.pool.idle()));
      }
    },
    async stop() {
      await passes.stop();
      await Promise.all(lanes.map((l) => l.pool.idle()));
    },
  };
}
