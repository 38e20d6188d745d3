import type { FastifyReply, FastifyRequest } from 'fastify';
import { windowsFromSettings, type RateLimitDecision, type RateLimitSettings, type RateLimitWindow } from '../../domain/rate-limiter.port.js';
import type { RateLimitOutcome, RateLimitService } from '../../services/rate-limit/rate-limit.service.js';
import { clientAddressKey } from '../../domain/client-address.js';
import { UnauthenticatedError } from '../../domain/errors.js';
import { sendError } from './errors.plugin.js';

const toSeconds = (ms: number) => Math.ceil(ms / 1000);

/** IETF draft-ietf-httpapi-ratelimit-headers: one quota policy per window, e.g. `"per-second";q=5;w=1`. */
export function formatPolicyHeader(windows: readonly RateLimitWindow[]): string {
  return windows.map((w) => `"${w.name}";q=${w.limit};w=${toSeconds(w.windowMs)}`).join(', ');
}

/** Remaining quota `r` and seconds `t` until the window next frees a unit, per policy. */
export function formatRateLimitHeader(decision: RateLimitDecision): string {
  return decision.windows.map((w) => `"${w.name}";r=${w.remaining};t=${toSeconds(w.resetMs)}`).join(', ');
}

export function retryAfterSeconds(decision: RateLimitDecision): number {
  return Math.max(1, toSeconds(decision.retryAfterMs));
}

/** A set of limits as the limiter checks it and the RateLimit-Policy header states it. */
export interface Policy {
  windows: readonly RateLimitWindow[];
  header: string;
}

/** Distinct sets of limits are few (one per partner at most); past this many the memo starts over. */
const MAX_POLICIES = 10_000;

/**
 * The policy of a partner's limits (null: the defaults). Each distinct set is built once; a
 * request finds it by the identity of its partner's cached limits, so the hot path builds no
 * windows and formats no header.
 */
export function partnerPolicies(defaults: readonly RateLimitWindow[]): (limits: Readonly<RateLimitSettings> | null) => Policy {
  const fallback: Policy = { windows: defaults, header: formatPolicyHeader(defaults) };
  const byIdentity = new WeakMap<Readonly<RateLimitSettings>, Policy>();
  const byValue = new Map<string, Policy>();
  return (limits) => {
    if (!limits) return fallback;
    let policy = byIdentity.get(limits);
    if (policy) return policy;
    const id = `${limits.perSecond}/${limits.perMinute}/${limits.perHour}`;
    policy = byValue.get(id);
    if (!policy) {
      if (byValue.size >= MAX_POLICIES) byValue.clear();
      const windows = windowsFromSettings(limits);
      policy = { windows, header: formatPolicyHeader(windows) };
      byValue.set(id, policy);
    }
    byIdentity.set(limits, policy);
    return policy;
  };
}

/**
 * Answers a request by its per-key limit's outcome: the RateLimit headers when the store decided,
 * 429 past the limit, 503 when a fail-closed store is down; undefined lets the request on.
 */
export function applyKeyLimit(reply: FastifyReply, policy: Policy, outcome: RateLimitOutcome): FastifyReply | undefined {
  if (outcome.kind === 'bypassed') return undefined;
  if (outcome.kind === 'unavailable') {
    return sendError(reply.header('retry-after', '1'), 'service_unavailable', 'Service temporarily unavailable');
  }
  const { decision } = outcome;
  reply.header('ratelimit-policy', policy.header).header('ratelimit', formatRateLimitHeader(decision));
  if (decision.allowed) return undefined;
  return sendError(reply.header('retry-after', String(retryAfterSeconds(decision))), 'rate_limited', 'Too Many Requests');
}

/** How a request a limit refuses is answered: 429 past the limit, 503 when a fail-closed store is down. */
export interface Refusal {
  statusCode: 429 | 503;
  retryAfterSeconds: number;
}

/** The refusal a limit's outcome calls for, or null to let the request on. */
export function refusalOf(outcome: RateLimitOutcome): Refusal | null {
  if (outcome.kind === 'bypassed') return null;
  if (outcome.kind === 'unavailable') return { statusCode: 503, retryAfterSeconds: 1 };
  return outcome.decision.allowed ? null : { statusCode: 429, retryAfterSeconds: retryAfterSeconds(outcome.decision) };
}

/** A refusal in the service's JSON error shape, with Retry-After. */
export function sendRefusal(reply: FastifyReply, refusal: Refusal, message = 'Too Many Requests') {
  const waiting = reply.header('retry-after', String(refusal.retryAfterSeconds));
  return refusal.statusCode === 429 ? sendError(waiting, 'rate_limited', message) : sendError(waiting, 'service_unavailable', 'Service temporarily unavailable');
}

/** The client a per-address limit counts: the connection's address (see clientAddressKey). */
export const clientKeyOf = (request: FastifyRequest) => clientAddressKey(request.ip);

/**
 * An onRequest hook limiting requests per client address, for routes no key identifies the caller
 * of; `refuse` answers in the route's own format (an HTML page or the JSON error shape).
 */
export function limitPerAddress(limiter: RateLimitService, refuse: (reply: FastifyReply, refusal: Refusal) => FastifyReply) {
  return async (request: FastifyRequest, reply: FastifyReply) => {
    const refusal = refusalOf(await limiter.check(clientKeyOf(request)));
    if (refusal) return refuse(reply, refusal);
  };
}

export const TOO_MANY_FAILURES = 'Too many failed authentications from this address';

/**
 * An onRequest hook running `authenticate` under the failed-authentication limit of the client's
 * address. An address over the limit is refused before its credentials are checked, good ones
 * too: guessing gets no answer past the limit, and made-up credentials cost no lookup. Only a
 * failed check (UnauthenticatedError) is recorded.
 */
export function authenticateWithinFailureLimit(failures: RateLimitService, authenticate: (request: FastifyRequest) => Promise<void>) {
  return async (request: FastifyRequest, reply: FastifyReply) => {
    const client = clientKeyOf(request);
    const refusal = refusalOf(await failures.peek(client));
    if (refusal) return sendRefusal(reply, refusal, TOO_MANY_FAILURES);
    try {
      await authenticate(request);
    } catch (err) {
      if (err instanceof UnauthenticatedError) await failures.record(client);
      throw err;
    }
  };
}
