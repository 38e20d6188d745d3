import { randomBytes } from 'node:crypto';
import type { Redis, Result } from 'ioredis';
import {
  toDecision,
  type RateLimitDecision,
  type RateLimitStore,
  type RateLimitWindow,
  type WindowCount,
} from '../../domain/rate-limiter.port.js';

declare module 'ioredis' {
  interface RedisCommander<Context> {
    rateLimitCheck(key: string, ...args: (string | number)[]): Result<number[], Context>;
  }
}

/**
 * One atomic sliding-log check. KEYS[1]: the key's sorted set (score = acceptance time in ms).
 * ARGV: now in ms (negative = use the Redis server clock, so instances with skewed clocks agree),
 * a unique member for this request (empty: a peek, which adds nothing), then (windowMs, limit) per
 * window. An entry counts in a window while now - score < windowMs. The request is added only when
 * every window has room, so refused requests never consume quota.
 * Returns {allowed 0|1, retryAfterMs, nowMs, then per window: count after the check, oldest score or -1}.
 */
export const RATE_LIMIT_LUA = `
local key = KEYS[1]
local now = tonumber(ARGV[1])
if now < 0 then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local n = (#ARGV - 2) / 2
local longest = 0
for i = 1, n do
  longest = math.max(longest, tonumber(ARGV[1 + 2 * i]))
end
redis.call('ZREMRANGEBYSCORE', key, '-inf', now - longest)
local allowed = 1
local retry = 0
local counts = {}
for i = 1, n do
  local w = tonumber(ARGV[1 + 2 * i])
  local limit = tonumber(ARGV[2 + 2 * i])
  local since = '(' .. (now - w)
  local c = redis.call('ZCOUNT', key, since, '+inf')
  counts[i] = c
  if c >= limit then
    allowed = 0
    local blocking = redis.call('ZRANGEBYSCORE', key, since, '+inf', 'WITHSCORES', 'LIMIT', c - limit, 1)
    retry = math.max(retry, tonumber(blocking[2]) + w - now)
  end
end
local added = 0
if allowed == 1 and ARGV[2] ~= '' then
  redis.call('ZADD', key, now, ARGV[2])
  redis.call('PEXPIRE', key, longest)
  added = 1
end
local out = { allowed, retry, now }
for i = 1, n do
  local w = tonumber(ARGV[1 + 2 * i])
  local oldest = redis.call('ZRANGEBYSCORE', key, '(' .. (now - w), '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
  out[#out + 1] = counts[i] + added
  out[#out + 1] = oldest[2] and tonumber(oldest[2]) or -1
end
return out
`;

export interface RedisStoreOptions {
  client: Redis;
  /** The windows a check is counted against when it names none. */
  windows: RateLimitWindow[];
  /** Milliseconds since the epoch; when absent the Redis server clock is used. */
  clock?: () => number;
  keyPrefix?: string;
  /** Whether close() also quits the client (true when the store created it). */
  ownsClient?: boolean;
}

function parseCounts(reply: number[], windowCount: number): WindowCount[] {
  return Array.from({ length: windowCount }, (_, i) => {
    const oldest = Number(reply[4 + 2 * i]);
    return { count: Number(reply[3 + 2 * i]), oldestMs: oldest < 0 ? null : oldest };
  });
}

const windowArgsOf = (windows: readonly RateLimitWindow[]) => windows.flatMap((w) => [w.windowMs, w.limit]);

/**
 * Shares one sliding log per key across every instance that points at the same Redis. The windows
 * travel with each check, so instances checking one key against different limits (one has seen a
 * partner's new limits, the other not yet) still count it in one log, atomically.
 */
export function createRedisRateLimitStore(opts: RedisStoreOptions): RateLimitStore {
  const { client } = opts;
  const prefix = opts.keyPrefix ?? 'rl:';
  const windowArgs = new WeakMap<readonly RateLimitWindow[], number[]>();
  // Members must be unique per request across instances; a process id plus a counter is cheaper than a UUID.
  const instanceId = randomBytes(6).toString('hex');
  let seq = 0;
  client.defineCommand('rateLimitCheck', { numberOfKeys: 1, lua: RATE_LIMIT_LUA });

  function argsFor(windows: readonly RateLimitWindow[]): number[] {
    let args = windowArgs.get(windows);
    if (!args) {
      args = windowArgsOf(windows);
      windowArgs.set(windows, args);
    }
    return args;
  }

  async function decide(key: string, member: string, windows: readonly RateLimitWindow[]): Promise<RateLimitDecision> {
    const now = opts.clock ? Math.floor(opts.clock()) : -1;
    const reply = await client.rateLimitCheck(prefix + key, now, member, ...argsFor(windows));
    return toDecision(windows, Number(reply[2]), reply[0] === 1, Number(reply[1]), parseCounts(reply, windows.length));
  }

  return {
    kind: 'redis',
    check(key, windows = opts.windows) {
      seq = (seq + 1) % Number.MAX_SAFE_INTEGER;
      return decide(key, `${instanceId}:${seq}`, windows);
    },
    peek: (key, windows = opts.windows) => decide(key, '', windows),
    async close() {
      if (!opts.ownsClient) return;
      // QUIT lets in-flight checks finish; a client that is not connected has nothing to flush.
      if (client.status === 'ready') await client.quit().catch(() => client.disconnect());
      else client.disconnect();
    },
  };
}
