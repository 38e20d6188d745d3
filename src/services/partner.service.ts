import { LRUCache } from 'lru-cache';
import { AppError, NotFoundError } from '../domain/errors.js';
import {
  acceptedKeyEnvironment,
  generateApiKey,
  hashApiKey,
  hashesEqual,
  keyEnvironment,
  keyPrefix,
  type KeyEnvironment,
} from '../domain/api-key.js';
import type { KeyLookupRow, PartnerRepository, PartnerRow } from '../db/repositories/partner.repository.js';
import type { AppEnv } from '../config.js';

export interface AuthenticatedPartner {
  id: string;
  name: string;
  qrStandard: 'qrpay' | 'govstd';
  environment: KeyEnvironment;
  /** Names the API key (not the partner): rate limits are per key. A hash prefix, never the key itself. */
  keyId: string;
}

export interface CreatePartnerInput {
  name: string;
  qrStandard?: 'qrpay' | 'govstd';
  environment?: KeyEnvironment;
  active?: boolean;
}

const UNAUTHORIZED = 'Invalid or missing API key';
const UNKNOWN_CACHE_MAX = 10_000;

interface VerifiedKey {
  row: KeyLookupRow;
  partner: Readonly<AuthenticatedPartner>;
}

export function createPartnerService(deps: {
  partners: PartnerRepository;
  appEnv: AppEnv;
  keyRotationGraceMs: number;
  /** How long a verified key is trusted without a database read; 0 disables the cache. */
  authCacheTtlMs?: number;
  now?: () => Date;
}) {
  const now = deps.now ?? (() => new Date());
  const accepted = acceptedKeyEnvironment(deps.appEnv);

  function newKey(environment: KeyEnvironment) {
    const apiKey = generateApiKey(environment);
    return { apiKey, stored: { hash: hashApiKey(apiKey), prefix: keyPrefix(apiKey) } };
  }

  // Known keys only, briefly: every request would otherwise cost a database round trip. Changes
  // made through this instance clear it at once; other instances see them within the TTL.
  const cache = new Map<string, { entry: VerifiedKey; at: number }>();
  const CACHE_MAX = 10_000;
  // Unknown keys too, for as long: a client retrying a wrong key, or a flood of one made-up key,
  // would otherwise cost a read each. Bounded on its own, so made-up keys never evict known ones.
  const unknown = new LRUCache<string, number>({ max: UNKNOWN_CACHE_MAX });
  // One database read per key at a time: when a busy key's entry expired, every request in the
  // round trip used to read it again, and at thousands of requests per second those reads queued
  // in the pool and held all requests for tens of milliseconds.
  const inflight = new Map<string, Promise<VerifiedKey | null>>();
  // Bumped by every clear, so a read that started before a change cannot cache the old row.
  let generation = 0;
  // Read on every request: without an injected clock, no Date is built for it.
  const clock = deps.now ? () => now().getTime() : Date.now;

  /** The key's row, checked against the hash and environment once, with the partner it names. */
  async function load(hash: string): Promise<VerifiedKey | null> {
    const startedIn = generation;
    const row = await deps.partners.findByKeyHash(hash);
    if (!row || !hashesEqual(row.keyHash, hash) || row.keyEnvironment !== accepted) {
      cache.delete(hash);
      if ((deps.authCacheTtlMs ?? 0) > 0 && startedIn === generation) unknown.set(hash, clock());
      return null;
    }
    unknown.delete(hash);
    const { id, name, qrStandard, environment } = row.partner;
    const entry: VerifiedKey = { row, partner: Object.freeze({ id, name, qrStandard, environment, keyId: hash.slice(0, 16) }) };
    if ((deps.authCacheTtlMs ?? 0) > 0 && startedIn === generation) {
      if (cache.size >= CACHE_MAX) cache.clear();
      cache.set(hash, { entry, at: clock() });
    }
    return entry;
  }

  function reload(hash: string): Promise<VerifiedKey | null> {
    const running = inflight.get(hash);
    if (running) return running;
    const pending: Promise<VerifiedKey | null> = load(hash).finally(() => {
      if (inflight.get(hash) === pending) inflight.delete(hash);
    });
    inflight.set(hash, pending);
    return pending;
  }

  /**
   * A cached entry is served while younger than the TTL; past half of it, the first request also
   * starts a reload in the background, so a key in steady use never waits for the database.
   */
  async function lookup(hash: string): Promise<VerifiedKey | null> {
    const ttl = deps.authCacheTtlMs ?? 0;
    const refusedAt = unknown.get(hash);
    if (refusedAt !== undefined) {
      if (clock() - refusedAt < ttl) return null;
      unknown.delete(hash);
    }
    const hit = cache.get(hash);
    const age = hit ? clock() - hit.at : Infinity;
    if (!hit || age >= ttl) return reload(hash);
    if (age >= ttl / 2 && !inflight.has(hash)) reload(hash).catch(() => undefined);
    return hit.entry;
  }

  function clearCache(): void {
    generation++;
    cache.clear();
    unknown.clear();
    inflight.clear();
  }

  /** A key that now exists may have been refused, or be being refused, while it did not. */
  function forgetRefusal(hash: string): void {
    generation++;
    unknown.delete(hash);
    inflight.delete(hash);
  }

  async function requirePartner(id: string): Promise<PartnerRow> {
    const partner = await deps.partners.findById(id);
    if (!partner) throw new NotFoundError('Partner');
    return partner;
  }

  return {
    async create(input: CreatePartnerInput): Promise<PartnerRow & { apiKey: string }> {
      const environment = input.environment ?? 'sandbox';
      const { apiKey, stored } = newKey(environment);
      const partner = await deps.partners.create(
        { name: input.name, qrStandard: input.qrStandard ?? 'qrpay', environment, active: input.active ?? true },
        stored,
      );
      forgetRefusal(stored.hash);
      return { ...partner, apiKey };
    },

    list: () => deps.partners.list(),
    count: () => deps.partners.count(),

    async update(id: string, patch: { active?: boolean; qrStandard?: 'qrpay' | 'govstd' }): Promise<PartnerRow> {
      const partner = await deps.partners.update(id, patch);
      clearCache();
      if (!partner) throw new NotFoundError('Partner');
      return partner;
    },

    async rotateKey(id: string): Promise<{ apiKey: string; previousKeysExpireAt: Date }> {
      const partner = await requirePartner(id);
      const { apiKey, stored } = newKey(partner.environment);
      const previousKeysExpireAt = new Date(now().getTime() + deps.keyRotationGraceMs);
      await deps.partners.rotateKey(id, partner.environment, stored, previousKeysExpireAt);
      clearCache();
      return { apiKey, previousKeysExpireAt };
    },

    /** 401 for a missing, unknown, expired or other-environment key; 403 for an inactive partner. */
    async authenticate(key: string | undefined): Promise<AuthenticatedPartner> {
      if (!key || keyEnvironment(key) !== accepted) throw new AppError(401, UNAUTHORIZED);
      const verified = await lookup(hashApiKey(key));
      if (!verified) throw new AppError(401, UNAUTHORIZED);
      const { row, partner } = verified;
      if (row.expiresAt && row.expiresAt.getTime() <= now().getTime()) throw new AppError(401, UNAUTHORIZED);
      if (!row.partner.active) throw new AppError(403, 'Partner account is inactive');
      return partner;
    },
  };
}

export type PartnerService = ReturnType<typeof createPartnerService>;
