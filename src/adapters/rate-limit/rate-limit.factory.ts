import { once } from 'node:events';
import type { Redis } from 'ioredis';
import { createRedisClient, redisErrorLogger } from '../redis-client.js';
import type { Config } from '../../config.js';
import { createMemoryRateLimitStore } from './memory-rate-limit.store.js';
import { createRedisRateLimitStore } from './redis-rate-limit.store.js';
import { windowsFromSettings, type RateLimitStore, type RateLimitWindow } from '../../services/rate-limit/rate-limiter.js';
import { createRateLimitService, type IncCounter, type RateLimitLog, type RateLimitService } from '../../services/rate-limit/rate-limit.service.js';

export interface RateLimitFactoryOptions {
  log: RateLimitLog & { info(obj: object, msg: string): void };
  /** Milliseconds since the epoch; unset means Date.now in memory and the Redis server clock in Redis. */
  clock?: () => number;
  counters?: { rejections?: IncCounter; storeErrors?: IncCounter };
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

async function createStore(config: Config, windows: RateLimitWindow[], opts: RateLimitFactoryOptions): Promise<RateLimitStore> {
  if (!config.redisUrl) return createMemoryRateLimitStore({ windows, clock: opts.clock });
  const client = createRateLimitRedisClient(config.redisUrl, config.rateLimitRedisTimeoutMs, opts.log);
  await waitUntilReady(client, 2000, opts.log);
  return createRedisRateLimitStore({ client, windows, clock: opts.clock, ownsClient: true });
}

export async function createRateLimitServiceFromConfig(config: Config, opts: RateLimitFactoryOptions): Promise<RateLimitService> {
  const windows = windowsFromSettings(config.rateLimit);
  const store = await createStore(config, windows, opts);
  opts.log.info({ store: store.kind, limits: config.rateLimit, failOpen: config.rateLimitFailOpen }, 'rate limiter ready');
  return createRateLimitService({ store, windows, failOpen: config.rateLimitFailOpen, log: opts.log, counters: opts.counters });
}
