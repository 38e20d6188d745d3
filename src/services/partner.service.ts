import { LRUCache } from 'lru-cache';
import { growingBound } from '../primitives/cache-bound.helper.js';
import { ForbiddenError, NotFoundError, UnauthenticatedError } from '../domain/errors.js';
import { acceptedKeyEnvironment, generateApiKey, hashApiKey, hashesEqual, keyEnvironment, keyPrefix } from '../domain/api-key.js';
import type { KeyLookupRow, PartnerPatch, PartnerRateLimits, PartnerRepository, PartnerRow } from '../db/repositories/partner.repository.js';
import type { AlsoInTransaction } from '../db/unit-of-work.js';
import type { AppEnv, KeyEnvironment, QrStandard } from '../domain/vocabulary.js';
import type { Clock } from '../domain/clock.port.js';

export type Partner = PartnerRow;

export interface AuthenticatedPartner {
  id: string;
  name: string;
  qrStandard: QrStandard;
  environment: KeyEnvironment;
  /** Names the API key (not the partner): rate limits are per key. A hash prefix, never the key itself. */
  keyId: string;
  /**
   * The partner's own limits, or null for the defaults. Cached with the key, so a change made on
   * another instance applies here within the cache TTL.
   */
  rateLimits: Readonly<PartnerRateLimits> | null;
}

export interface CreatePartnerInput {
  name: string;
  qrStandard?: QrStandard;
  environment?: KeyEnvironment;
  active?: boolean;
}

const UNAUTHORIZED = 'Invalid or missing API key';
const CACHE_MAX = 10_000;
const UNKNOWN_CACHE_MAX = 10_000;

interface VerifiedKey {
  row: KeyLookupRow;
  partner: Readonly<AuthenticatedPartner>;
}

/** What a fetch's first caller learns even when a change discards the fetch from the cache. */
interface FetchContext {
  load?: Promise<VerifiedKey | null>;
}

// lru-cache counts an entry fresh through the whole of its last millisecond; ours end at it.
const freshFor = (ms: number) => Math.max(Math.ceil(ms) - 1, 1);

/** Keys checked against the database, kept for up to the TTL (see lookup), and how a change here forgets them. */
function verifiedKeys(deps: { partners: PartnerRepository; authCacheTtlMs?: number; now: Clock }, accepted: KeyEnvironment) {
  const ttl = deps.authCacheTtlMs ?? 0;
  const injected = deps.now;
  // Read on every request: without an injected clock, no Date is built for it.
  const clock = injected ? () => injected().getTime() : Date.now;
  // Exact ages under an injected clock: lru-cache otherwise reuses a reading for a millisecond.
  const timing = { perf: { now: clock }, ttlResolution: 0 };

  /** The key's row, checked against the hash and environment once, with the partner it names. */
  async function load(hash: string): Promise<VerifiedKey | null> {
    const row = await deps.partners.findByKeyHash(hash);
    if (!row || !hashesEqual(row.keyHash, hash) || row.keyEnvironment !== accepted) return null;
    const { id, name, qrStandard, environment } = row.partner;
    const rateLimits = row.partner.rateLimits ? Object.freeze(row.partner.rateLimits) : null;
    return { row, partner: Object.freeze({ id, name, qrStandard, environment, keyId: hash.slice(0, 16), rateLimits }) };
  }

  // Unknown keys, for the TTL: a client retrying a wrong key, or a flood of one made-up key, would
  // otherwise cost a read each. Bounded on its own, so made-up keys never evict known ones.
  const unknown = new LRUCache<string, true>({ ...growingBound(UNKNOWN_CACHE_MAX), ttl: freshFor(ttl), ...timing });

  // Known keys, briefly: every request would otherwise cost a database round trip. lru-cache runs
  // one read per key at a time (at thousands of requests per second, expired entries read again by
  // every request queued in the pool), and a change made here deletes the entry, which discards a
  // read in flight. Entries go stale at half the TTL: the first request after that reloads in the
  // background while the cached row still answers, so a key in steady use never waits; a row older
  // than the TTL is never served (see lookup).
  const known = new LRUCache<string, VerifiedKey, FetchContext>({
    ...growingBound(CACHE_MAX),
    ttl: freshFor(ttl / 2),
    noDeleteOnFetchRejection: true,
    ...timing,
    fetchMethod: async (hash, _stale, { signal, context }) => {
      const loading = load(hash);
      context.load = loading;
      const entry = await loading;
      if (!entry && !signal.aborted) unknown.set(hash, true);
      return entry ?? undefined;
    },
  });

  async function lookup(hash: string): Promise<VerifiedKey | null> {
    if (ttl <= 0) return load(hash);
    if (unknown.has(hash)) return null;
    const context: FetchContext = {};
    try {
      // Past the TTL (half of it stale) the request waits for a fresh read.
      const allowStale = known.getRemainingTTL(hash) > freshFor(ttl / 2) - ttl;
      return (await known.fetch(hash, { allowStale, context })) ?? null;
    } catch {
      // The read failed, or a change discarded it: its first caller gets what that read gave (never
      // cached), and callers who joined it read again.
      if (context.load) return context.load;
      return load(hash);
    }
  }

  /**
   * The key's entry while it is fresh (younger than half the TTL), without a read or a promise;
   * undefined otherwise. A stale entry stays for lookup to serve while it reloads.
   */
  function fresh(hash: string): VerifiedKey | undefined {
    if (ttl <= 0) return undefined;
    return known.get(hash, { allowStale: false, noDeleteOnStaleGet: true });
  }

  function clearCache(): void {
    known.clear();
    unknown.clear();
  }

  /** A key that now exists may have been refused, or be being refused, while it did not. */
  function forgetRefusal(hash: string): void {
    unknown.delete(hash);
    known.delete(hash);
  }

  return { lookup, fresh, clearCache, forgetRefusal };
}

export function createPartnerService(deps: {
  partners: PartnerRepository;
  appEnv: AppEnv;
  keyRotationGraceMs: number;
  /** How long a verified key is trusted without a database read; 0 disables the cache. */
  authCacheTtlMs?: number;
  now: Clock;
  /** Makes each new key; the domain's random generator unless a test needs to know the next one. */
  generateKey?: (environment: KeyEnvironment) => string;
}) {
  const { now } = deps;
  const accepted = acceptedKeyEnvironment(deps.appEnv);
  const generateKey = deps.generateKey ?? generateApiKey;

  function newKey(environment: KeyEnvironment) {
    const apiKey = generateKey(environment);
    return { apiKey, stored: { hash: hashApiKey(apiKey), prefix: keyPrefix(apiKey) } };
  }

  const { lookup, fresh, clearCache, forgetRefusal } = verifiedKeys(deps, accepted);

  /** Why a verified key may not be served now (it has expired, or its partner is inactive), or null. */
  const refusalOf = ({ row }: VerifiedKey): 'expired' | 'inactive' | null =>
    row.expiresAt && row.expiresAt.getTime() <= now().getTime() ? 'expired' : row.partner.active ? null : 'inactive';

  async function requirePartner(id: string): Promise<PartnerRow> {
    const partner = await deps.partners.findById(id);
    if (!partner) throw new NotFoundError('Partner');
    return partner;
  }

  return {
    async create(input: CreatePartnerInput, also?: AlsoInTransaction<PartnerRow>): Promise<PartnerRow & { apiKey: string }> {
      const environment = input.environment ?? 'sandbox';
      const { apiKey, stored } = newKey(environment);
      const partner = await deps.partners.create(
        { name: input.name, qrStandard: input.qrStandard ?? 'qrpay', environment, active: input.active ?? true },
        stored,
        also,
      );
      forgetRefusal(stored.hash);
      return { ...partner, apiKey };
    },

    get: requirePartner,
    list: () => deps.partners.list(),
    count: () => deps.partners.count(),

    async update(id: string, patch: PartnerPatch, also?: AlsoInTransaction<PartnerRow>): Promise<PartnerRow> {
      const partner = await deps.partners.update(id, patch, also);
      clearCache();
      if (!partner) throw new NotFoundError('Partner');
      return partner;
    },

    async rotateKey(id: string, also?: AlsoInTransaction<string>): Promise<{ apiKey: string; previousKeysExpireAt: Date }> {
      const partner = await requirePartner(id);
      const { apiKey, stored } = newKey(partner.environment);
      const previousKeysExpireAt = new Date(now().getTime() + deps.keyRotationGraceMs);
      await deps.partners.rotateKey(id, partner.environment, stored, previousKeysExpireAt, also);
      clearCache();
      return { apiKey, previousKeysExpireAt };
    },

    /**
     * The partner a key names when its check is still fresh in the cache and it would pass
     * (unexpired, active partner): what authenticate would return, without waiting. Undefined for
     * every other key, whose answer authenticate gives.
     */
    authenticateCached(key: string | undefined): AuthenticatedPartner | undefined {
      if (!key || keyEnvironment(key) !== accepted) return undefined;
      const verified = fresh(hashApiKey(key));
      return verified && refusalOf(verified) === null ? verified.partner : undefined;
    },

    /** Unauthenticated for a missing, unknown, expired or other-environment key; forbidden for an inactive partner. */
    async authenticate(key: string | undefined): Promise<AuthenticatedPartner> {
      if (!key || keyEnvironment(key) !== accepted) throw new UnauthenticatedError(UNAUTHORIZED);
      const verified = await lookup(hashApiKey(key));
      if (!verified) throw new UnauthenticatedError(UNAUTHORIZED);
      const refusal = refusalOf(verified);
      if (refusal === 'expired') throw new UnauthenticatedError(UNAUTHORIZED);
      if (refusal === 'inactive') throw new ForbiddenError('Partner account is inactive', 'partner_inactive');
      return verified.partner;
    },
  };
}

export type PartnerService = ReturnType<typeof createPartnerService>;
