import { createLeasedWorkLoop, type LeasedWorkJob, type WorkLane } from '../work/leased-work.loop.js';
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
import type { Clock } from '../domain/clock.port.js';

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
  /** How long a claim stays ours: longer than one attempt can take (src/domain/lease-policy.ts). */
  leaseMs: number;
  /** A pass (its claims) past this is abandoned. */
  passDeadlineMs?: number;
  concurrency: WebhookConcurrency;
  /** Attempts in flight in one instance to webhooks whose last attempt failed or timed out. */
  slowConcurrency: number;
  log: Logger;
  /** Errors that only say the database is away are its to log (once per outage). */
  outage?: DatabaseOutage;
  /** Runs a pass as background work (WorkPriority), wherever the nudge came from. */
  background?: <T>(fn: () => Promise<T>) => Promise<T>;
  now: Clock;
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
 * Delivers due webhook deliveries through the leased-work loop. A pass claims only as many rows of
 * each endpoint and partner as they have free slots here and starts the attempts without waiting
 * for them: a hanging receiver holds its own slots until its timeout, never the next pass or
 * another partner's deliveries.
 *
 * Webhooks whose last attempt failed or timed out are claimed in a slow lane of their own slots,
 * one attempt per webhook, so they never hold the slots of the healthy ones; in each lane a
 * partner holds at most its share of the slots (partnerShare), which also covers receivers that
 * hang before any attempt of theirs has timed out.
 */
export function createWebhookDeliveryJob(deps: WebhookDeliveryJobDeps): LeasedWorkJob {
  const { concurrency } = deps;

  function lane(name: DeliveryLane, perEndpoint: number, capacity: number): WorkLane<ClaimedDelivery> {
    return {
      name,
      perKey: perEndpoint,
      total: capacity,
      keyOf: (c) => c.webhookId,
      idOf: (c) => c.id,
      async claim(slots, at) {
        const running = slots.inFlight();
        const limits: ClaimLimits = {
          lane: name,
          total: slots.pool.free(),
          perEndpoint,
          perPartner: concurrency.perPartner,
          endpointFree: freeOf(countBy(running, (c) => c.webhookId), perEndpoint),
          partnerFree: freeOf(countBy(running, (c) => c.partnerId), concurrency.perPartner),
          capacity,
        };
        const claimed = await deps.deliveries.claimDue(at, new Date(at.getTime() + deps.leaseMs), limits);
        return { claimed, saturated: saturatedEndpoints([...running, ...claimed], claimed, limits, capacity) };
      },
      perform: async (c) => (await deps.service.attempt(c)).movedLane,
      // An unrecorded attempt is retried when its lease runs out.
      failure: { level: 'error', message: 'webhook attempt could not be recorded' },
    };
  }

  return createLeasedWorkLoop({
    name: 'webhook-delivery',
    intervalMs: deps.intervalMs,
    lanes: [lane('normal', concurrency.perEndpoint, concurrency.total), lane('slow', SLOW_PER_ENDPOINT, deps.slowConcurrency)],
    log: deps.log,
    outage: deps.outage,
    background: deps.background,
    now: deps.now,
    passDeadlineMs: deps.passDeadlineMs,
  });
}
