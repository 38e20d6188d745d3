import { setTimeout as sleep } from 'node:timers/promises';
import type { FastifyReply, FastifyRequest, onRequestAsyncHookHandler, onSendAsyncHookHandler } from 'fastify';
// For the FastifyContextConfig augmentation that types routeOptions.config.operation.
import type {} from './fault.registry.js';
import type { SimSource, SimulatorState } from './simulator.state.js';

/** Long enough that any sane client gives up first. */
const TIMEOUT_HOLD_MS = 60_000;

/** The delay of each request answered late, set when it came in: a fault changed since does not reach it. */
const lateBy = new WeakMap<FastifyRequest, number>();

/** A 200 body that is valid JSON but matches none of the sources' envelopes. */
const MALFORMED_BODY = { status: 'maintenance', html: '<h1>Service temporarily unavailable</h1>' };

/** Resolves after ms, when the server closes, or when the client goes away; never keeps the process alive. */
async function pause(ms: number, closing: AbortSignal, reply: FastifyReply): Promise<void> {
  const gone = new AbortController();
  reply.raw.once('close', () => gone.abort());
  try {
    await sleep(ms, undefined, { ref: false, signal: AbortSignal.any([closing, gone.signal]) });
  } catch {
    // Aborted: the answer no longer matters to anyone.
  }
}

/** The payment a call names (status, cancel), from its path. */
function paymentIdOf(request: FastifyRequest): string | undefined {
  const params = request.params;
  if (typeof params !== 'object' || params === null || !('paymentId' in params)) return undefined;
  return typeof params.paymentId === 'string' ? params.paymentId : undefined;
}

/**
 * Applies the fault configured for the source (and the route's operation) before the route runs,
 * and counts the call in flight until its connection answers or goes away.
 */
export function faultHook(source: SimSource, state: SimulatorState, closing: AbortSignal): onRequestAsyncHookHandler {
  /** Requests of this source not yet answered: what a `loaded` source slows down with. */
  let inFlight = 0;
  return async (request: FastifyRequest, reply: FastifyReply) => {
    inFlight += 1;
    // Unrouted requests (404s) carry no operation, so only a source-wide fault reaches them.
    const operation = request.routeOptions.config.operation;
    const ended = operation ? state.calls.start(source, operation, paymentIdOf(request)) : undefined;
    reply.raw.once('close', () => {
      inFlight -= 1;
      ended?.();
    });
    const paymentId = paymentIdOf(request);
    if (operation === 'status' && paymentId !== undefined && state.isDownFor(source, paymentId)) {
      return reply.code(500).send({ message: 'internal server error' });
    }
    const fault = state.faults.get(source, operation);
    switch (fault.mode) {
      case 'error':
        return reply.code(500).send({ message: 'internal server error' });
      case 'malformed':
        return reply.code(200).send(MALFORMED_BODY);
      case 'timeout':
        await pause(TIMEOUT_HOLD_MS, closing, reply);
        return reply.code(504).send({ message: 'gateway timeout' });
      case 'slow':
        await pause(fault.delayMs, closing, reply);
        return;
      case 'loaded':
        await pause(fault.delayMs + fault.perInFlightMs * inFlight, closing, reply);
        return;
      case 'late':
        lateBy.set(request, fault.delayMs);
        return;
      case 'none':
        return;
    }
  };
}

/** Holds the answer of a request that came in under a `late` fault: decided at once, delivered later. */
export function lateAnswerHook(closing: AbortSignal): onSendAsyncHookHandler {
  return async (request: FastifyRequest, reply: FastifyReply) => {
    const ms = lateBy.get(request);
    if (ms !== undefined) await pause(ms, closing, reply);
  };
}
