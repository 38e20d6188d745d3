import type { FastifyReply, FastifyRequest, onRequestAsyncHookHandler } from 'fastify';
// For the FastifyContextConfig augmentation that types routeOptions.config.operation.
import type {} from './fault.registry.js';
import type { SimSource } from './simulator.types.js';

/** A status call that arrived while another call for the same payment was still unanswered. */
export interface StatusOverlap {
  source: SimSource;
  paymentId: string;
  at: string;
  /** Calls for this payment unanswered when it arrived, itself included. */
  inFlight: number;
}

/**
 * Status calls in flight per payment. A service whose instances share work by leases should never
 * ask about one payment twice at once; a test reads the overlaps to find out whether it did.
 */
export class StatusCalls {
  private readonly inFlight = new Map<string, number>();
  private readonly seen: StatusOverlap[] = [];
  private calls = 0;

  enter(source: SimSource, paymentId: string): () => void {
    const key = `${source}\u0000${paymentId}`;
    const now = (this.inFlight.get(key) ?? 0) + 1;
    this.inFlight.set(key, now);
    this.calls += 1;
    if (now > 1) this.seen.push({ source, paymentId, at: new Date().toISOString(), inFlight: now });
    let left = false;
    return () => {
      if (left) return;
      left = true;
      const rest = (this.inFlight.get(key) ?? 1) - 1;
      if (rest > 0) this.inFlight.set(key, rest);
      else this.inFlight.delete(key);
    };
  }

  report(): { calls: number; overlaps: StatusOverlap[] } {
    return { calls: this.calls, overlaps: [...this.seen] };
  }

  clear(): void {
    this.inFlight.clear();
    this.seen.length = 0;
    this.calls = 0;
  }
}

/**
 * Counts a status call in flight from its arrival (before any configured delay) until its answer
 * is sent or its caller goes away. Registered before the fault hook, so a slow answer counts whole.
 */
export function statusCallHook(source: SimSource, calls: StatusCalls): onRequestAsyncHookHandler {
  return async (request: FastifyRequest, reply: FastifyReply) => {
    if (request.routeOptions.config.operation !== 'status') return;
    const { paymentId } = request.params as { paymentId?: string };
    if (!paymentId) return;
    reply.raw.once('close', calls.enter(source, paymentId));
  };
}
