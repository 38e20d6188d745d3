import type { PushDeliveryRepository } from '../db/repositories/push-delivery.repository.js';
import type { PushDeliveryService } from '../services/push-delivery.service.js';
import { createLeasedWorkLoop, type LeasedWorkJob, type WorkLane } from '../work/leased-work.loop.js';
import type { ClaimedPush } from '../db/repositories/push-delivery.repository.js';
import type { Logger } from '../domain/logger.port.js';
import type { DatabaseOutage } from '../db/database-outage.monitor.js';
import type { Clock } from '../domain/clock.port.js';

export interface PushDeliveryJobDeps {
  pushes: PushDeliveryRepository;
  service: PushDeliveryService;
  intervalMs: number;
  /** How long a claim stays ours: longer than one send can take (src/domain/lease-policy.ts). */
  leaseMs: number;
  /** A pass (its claim) past this is abandoned. */
  passDeadlineMs?: number;
  /** Pushes in flight in one instance: overall and per partner. */
  limits: { total: number; perPartner: number };
  log: Logger;
  outage?: DatabaseOutage;
  now: Clock;
}

/**
 * Pushes queued by confirmations, fed from the outbox like webhooks, through the leased-work loop
 * keyed by partner: one partner's burst of confirmations cannot hold back another's, and a failed
 * push waits for its retry. Confirmations never wait for a push.
 */
export function createPushDeliveryJob(deps: PushDeliveryJobDeps): LeasedWorkJob {
  const { perPartner, total } = deps.limits;
  const lane: WorkLane<ClaimedPush> = {
    name: 'pushes',
    perKey: perPartner,
    total,
    keyOf: (c) => c.partnerId,
    idOf: (c) => c.id,
    async claim(slots, at) {
      const running = slots.inFlight();
      const partnerFree = new Map(running.map((c) => [c.partnerId, slots.pool.available(c.partnerId)]));
      const free = slots.pool.free();
      // The lease outlasts one send: a worker that dies mid-send lets it run out and another retries.
      const claimed = await deps.pushes.claimDue(at, new Date(at.getTime() + deps.leaseMs), { total: free, perPartner, partnerFree });
      const busy = new Set([...running, ...claimed].map((c) => c.partnerId));
      const taken = (partner: string) => claimed.filter((c) => c.partnerId === partner).length;
      return { claimed, saturated: claimed.length >= free ? busy : [...busy].filter((p) => taken(p) >= (partnerFree.get(p) ?? perPartner)) };
    },
    perform: async (c) => {
      await deps.service.attempt(c);
    },
    failure: { level: 'error', message: 'push attempt could not be recorded' },
  };
  return createLeasedWorkLoop({ name: 'push-delivery', intervalMs: deps.intervalMs, lanes: [lane], log: deps.log, outage: deps.outage, now: deps.now, passDeadlineMs: deps.passDeadlineMs });
}
