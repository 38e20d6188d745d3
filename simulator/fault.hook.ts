import { Readable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import type { FastifyReply, FastifyRequest, onRequestAsyncHookHandler, onSendAsyncHookHandler } from 'fastify';
import { OVERSIZE_DEFAULTS, type Fault } from './fault.registry.js';
import type { SimSource, SimulatorState } from './simulator.state.js';

/** Long enough that any sane client gives up first. */
const TIMEOUT_HOLD_MS = 60_000;

/** The delay of each request answered late, set when it came in: a fault changed since does not reach it. */
const lateBy = new WeakMap<FastifyRequest, number>();

/** A 200 body that is valid JSON but matches none of the sources' envelopes. */
const MALFORMED_BODY = { status: 'maintenance', html: '<h1>Service temporarily unavailable</h1>' };

/** The padding of each request answered oversized, set when it came in, added to its answer on the way out. */
const paddedWith = new WeakMap<FastifyRequest, { mode: 'huge-members' | 'huge-string'; size: number }>();

const MIB = 1024 * 1024;
/** One shared chunk: streaming a huge answer costs the simulator one MiB, not the answer. */
const FILLER = Buffer.alloc(MIB, 'x');
const KEYS_PER_CHUNK = 10_000;

/** An object of `keys` members `"k<n>":0`, a batch of keys at a time. */
function* manyMembers(keys: number): Generator<Buffer> {
  yield Buffer.from('{');
  for (let from = 0; from < keys; from += KEYS_PER_CHUNK) {
    const batch: string[] = [];
    for (let n = from; n < Math.min(keys, from + KEYS_PER_CHUNK); n += 1) batch.push(`"k${n}":0`);
    yield Buffer.from(`${from === 0 ? '' : ','}${batch.join(',')}`);
  }
  yield Buffer.from('}');
}

/** A string of `length` x's, a MiB at a time. */
function* longString(length: number): Generator<Buffer> {
  yield Buffer.from('"');
  for (let left = length; left > 0; left -= MIB) yield left >= MIB ? FILLER : FILLER.subarray(0, left);
  yield Buffer.from('"');
}

/** The route's answer (a JSON object) with the padding member in front, so a reader meets it first. */
function* padded(answer: string, padding: Generator<Buffer>): Generator<Buffer> {
  yield Buffer.from('{"padding":');
  yield* padding;
  const rest = answer.slice(1);
  yield Buffer.from(rest.startsWith('}') ? rest : `,${rest}`);
}

/** A JSON string that never closes: 1 MiB chunks until the caller goes away and the stream is destroyed. */
function* endless(): Generator<Buffer> {
  yield Buffer.from('{"data":"');
  for (;;) yield FILLER;
}

/** Byte-mode, so the stream buffers a chunk or so ahead of the socket, never the whole answer. */
const streamOf = (chunks: Generator<Buffer>): Readable => Readable.from(chunks, { objectMode: false });

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
    const fault: Fault = state.faults.get(source, operation);
    switch (fault.mode) {
      case 'huge-members':
      case 'huge-string':
        paddedWith.set(request, { mode: fault.mode, size: fault.size ?? OVERSIZE_DEFAULTS[fault.mode] });
        return;
      case 'endless':
        return reply.code(200).type('application/json').send(streamOf(endless()));
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

/** Streams the route's answer of a request that came in under a `huge-members` or `huge-string` fault, padded. */
export function oversizeAnswerHook(): onSendAsyncHookHandler {
  return async (request: FastifyRequest, _reply: FastifyReply, payload: unknown) => {
    const padding = paddedWith.get(request);
    if (padding === undefined || typeof payload !== 'string' || !payload.startsWith('{')) return payload;
    const member = padding.mode === 'huge-members' ? manyMembers(padding.size) : longString(padding.size);
    return streamOf(padded(payload, member));
  };
}

/** Holds the answer of a request that came in under a `late` fault: decided at once, delivered later. */
export function lateAnswerHook(closing: AbortSignal): onSendAsyncHookHandler {
  return async (request: FastifyRequest, reply: FastifyReply) => {
    const ms = lateBy.get(request);
    if (ms !== undefined) await pause(ms, closing, reply);
  };
}
