import { once } from 'node:events';
import type { Redis } from 'ioredis';
import { createRedisClient, redisErrorLogger } from '../adapters/redis-client.js';
import type { Config } from '../config/config.js';
import { createMemoryRateLimitStore } from '../adapters/rate-limit/memory-rate-limit.store.js';
import { createRedisRateLimitStore } from '../adapters/rate-limit/redis-rate-limit.store.js';
import { windowsFromSettings, type RateLimitStore, type RateLimitWindow } from '../domain/rate-limiter.port.js';
import { createRateLimitService, type IncCounter, type RateLimitLog, type RateLimitService } from '../services/rate-limit/rate-limit.service.js';

export interface RateLimitFactoryOptions {
  log: RateLimitLog & { info(obj: object, msg: string): void };
  /** Milliseconds since the epoch; unset means Date.now in memory and the Redis server clock in Redis. */
  clock?: () => number;
  counters?: { rejections?: IncCounter; storeErrors?: IncCounter };
  /** Put before every Redis key, so services sharing one Redis can keep separate counts. */
  keyNamespace?: string;
}

/**
 * A limiter must never hang a request: commands time out quickly, and with no offline queue a
 * command issued while disconnected fails at once (then fail-open/closed applies) instead of waiting.
 */
export function createRateLimitRedisClient(url: string, commandTimeoutMs: number, log: RateLimitLog): Redis {
  return createRedisClient(url, { commandTimeoutMs, onError: redisErrorLogger(log, 'rate-limit Redis connection error') });
}

/** Waits briefly for the first connection so the first requests are counted, without blocking start-up on an outage. */
async function waitUntilReady(client: Redis, timeoutMs: number, log: RateLimitFactoryOptions['log']): Promise<void> {
  if (client.status === 'ready') return;
  try {
    await once(client, 'ready', { signal: AbortSignal.timeout(timeoutMs) });
  } catch (err) {
    log.warn({ err: err instanceof Error ? err.message : String(err) }, 'rate-limit Redis not ready at start; failing open/closed until it connects');
  }
}

/** The limits this service applies, each with its own sliding logs under its own key prefix. */
export interface RateLimiters {
  /** Per API key: RATE_LIMIT_PER_SECOND / _MINUTE / _HOUR. */
  perKey: RateLimitService;
  /** Failed authentications per client address: AUTH_FAILURES_PER_MINUTE. */
  authFailures: RateLimitService;
  /** Wrong operator tokens on the admin listener per client address: AUTH_FAILURES_PER_MINUTE, counted apart. */
  operatorAuthFailures: RateLimitService;
  /** QR landing-page requests per client address: SHORT_LINK_RATE_LIMIT_PER_MINUTE. */
  shortLinks: RateLimitService;
  close(): Promise<void>;
}

interface Limit {
  name: keyof Omit<RateLimiters, 'close'>;
  windows: RateLimitWindow[];
  /** Redis key prefix; per-key logs keep the prefix they always had. */
  prefix: string;
  /** Lets requests through while Redis is down whatever RATE_LIMIT_FAIL_OPEN says. */
  alwaysFailOpen?: boolean;
}

function limitsFromConfig(config: Config): Limit[] {
  const perMinute = (name: string, limit: number): RateLimitWindow[] => [{ name, limit, windowMs: 60_000 }];
  return [
    { name: 'perKey', windows: windowsFromSettings(config.rateLimit), prefix: 'rl:' },
    { name: 'authFailures', windows: perMinute('auth-failures-per-minute', config.authFailuresPerMinute), prefix: 'rl:auth-fail:' },
    // Failing closed would lock the operators out of the back office during a Redis outage, when
    // they may need it most; the admin listener is loopback-only, so what an outage lets through is brief and local.
    { name: 'operatorAuthFailures', windows: perMinute('auth-failures-per-minute', config.authFailuresPerMinute), prefix: 'rl:admin-auth-fail:', alwaysFailOpen: true },
    { name: 'shortLinks', windows: perMinute('per-minute', config.shortLinkRateLimitPerMinute), prefix: 'rl:q:' },
  ];
}

/** In memory without REDIS_URL; with it, one Redis connection shared by every limit, so all instances count together. */
export async function createRateLimitersFromConfig(config: Config, opts: RateLimitFactoryOptions): Promise<RateLimiters> {
  const limits = limitsFromConfig(config);
  const client = config.redisUrl ? createRateLimitRedisClient(config.redisUrl, config.rateLimitRedisTimeoutMs, opts.log) : null;
  if (client) await waitUntilReady(client, 2000, opts.log);
  const storeFor = (limit: Limit): RateLimitStore =>
    client
      ? createRedisRateLimitStore({ client, windows: limit.windows, clock: opts.clock, keyPrefix: (opts.keyNamespace ?? '') + limit.prefix })
      : createMemoryRateLimitStore({ windows: limit.windows, clock: opts.clock });
  const services = Object.fromEntries(
    limits.map((limit) => [
      limit.name,
      createRateLimitService({ store: storeFor(limit), windows: limit.windows, failOpen: limit.alwaysFailOpen === true || config.rateLimitFailOpen, log: opts.log, counters: opts.counters }),
    ]),
  ) as Omit<RateLimiters, 'close'>;
  opts.log.info(
    { store: client ? 'redis' : 'memory', limits: config.rateLimit, authFailuresPerMinute: config.authFailuresPerMinute, shortLinkPerMinute: config.shortLinkRateLimitPerMinute, failOpen: config.rateLimitFailOpen },
    'rate limiters ready',
  );
  return {
    ...services,
    async close() {
      await Promise.all(Object.values(services).map((service) => service.close()));
      if (!client) return;
      // QUIT lets in-flight checks finish; a client that is not connected has nothing to flush.
      if (client.status === 'ready') await client.quit().catch(() => client.disconnect());
      else client.disconnect();
    },
  };
}
