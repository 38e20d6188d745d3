import { randomBytes } from 'node:crypto';
import type { Redis, Result } from 'ioredis';
import {
  checkAfterPeek,
  toDecision,
  type RateLimitDecision,
  type RateLimitStore,
  type RateLimitWindow,
  type WindowCount,
} from '../../domain/rate-limiter.port.js';

declare module 'ioredis' {
  interface RedisCommander<Context> {
    rateLimitCheck(key: string, ...args: (string | number)[]): Result<number[], Context>;
    rateLimitCheckGuarded(guardKey: string, key: string, ...args: (string | number)[]): Result<number[], Context>;
  }
}

/**
 * One sliding-log check of KEYS[key] (score = acceptance time in ms) against the windows in ARGV
 * from index `first` on, as (windowMs, limit) pairs. `member` unique per request, or empty for a
 * peek, which adds nothing. An entry counts in a window while now - score < windowMs. The request
 * is added only when every window has room, so refused requests never consume quota.
 * Returns {allowed 0|1, retryAfterMs, nowMs, then per window: count after the check, oldest score or -1}.
 * ARGV[1] is now in ms (negative = the Redis server clock, so instances with skewed clocks agree).
 */
const SLIDING_LOG_LUA = `
local function clock()
  local now = tonumber(ARGV[1])
  if now < 0 then
    local t = redis.call('TIME')
    now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  end
  return now
end
local function emptyPeek(now, first, n)
  local out = { 1, 0, now }
  for i = 0, n - 1 do
    if tonumber(ARGV[first + 2 * i + 1]) <= 0 then
      return nil
    end
    out[#out + 1] = 0
    out[#out + 1] = -1
  end
  return out
end
local function limit(key, now, member, first, n)
  -- A peek at a log nothing was counted in (an address without failed authentications, as on
  -- nearly every request): its answer without trimming, counting and reading it.
  if member == '' and redis.call('EXISTS', key) == 0 then
    local out = emptyPeek(now, first, n)
    if out then
      return out
    end
  end
  local longest = 0
  for i = 0, n - 1 do
    longest = math.max(longest, tonumber(ARGV[first + 2 * i]))
  end
  redis.call('ZREMRANGEBYSCORE', key, '-inf', now - longest)
  local allowed = 1
  local retry = 0
  local counts = {}
  for i = 0, n - 1 do
    local w = tonumber(ARGV[first + 2 * i])
    local lim = tonumber(ARGV[first + 2 * i + 1])
    local since = '(' .. (now - w)
    local c = redis.call('ZCOUNT', key, since, '+inf')
    counts[i + 1] = c
    if c >= lim then
      allowed = 0
      local blocking = redis.call('ZRANGEBYSCORE', key, since, '+inf', 'WITHSCORES', 'LIMIT', c - lim, 1)
      retry = math.max(retry, tonumber(blocking[2]) + w - now)
    end
  end
  local added = 0
  if allowed == 1 and member ~= '' then
    redis.call('ZADD', key, now, member)
    redis.call('PEXPIRE', key, longest)
    added = 1
  end
  local out = { allowed, retry, now }
  for i = 0, n - 1 do
    local w = tonumber(ARGV[first + 2 * i])
    local oldest = redis.call('ZRANGEBYSCORE', key, '(' .. (now - w), '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
    out[#out + 1] = counts[i + 1] + added
    out[#out + 1] = oldest[2] and tonumber(oldest[2]) or -1
  end
  return out
end
`;

/** One atomic check. KEYS[1]: the key's log. ARGV: now, the member, then the windows. */
export const RATE_LIMIT_LUA = `${SLIDING_LOG_LUA}
return limit(KEYS[1], clock(), ARGV[2], 3, (#ARGV - 2) / 2)
`;

/**
 * A peek at a guard's log, then, only when it has room, a check: both atomic together. KEYS[1]:
 * the guard's log, KEYS[2]: the checked key's. ARGV: now, the guard's window count g, its g
 * windows, the member, then the checked windows. Returns the guard's reply, followed by the
 * check's when the guard allowed it.
 */
export const GUARDED_RATE_LIMIT_LUA = `${SLIDING_LOG_LUA}
local now = clock()
local g = tonumber(ARGV[2])
local guard = limit(KEYS[1], now, '', 3, g)
if guard[1] == 0 then
  return guard
end
local at = 3 + 2 * g
local checked = limit(KEYS[2], now, ARGV[at], at + 1, (#ARGV - at) / 2)
for i = 1, #checked do
  guard[#guard + 1] = checked[i]
end
return guard
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

/** The decision in one check's part of a reply, which starts at `at`. */
function decisionAt(reply: number[], at: number, windows: readonly RateLimitWindow[]): RateLimitDecision {
  const counts: WindowCount[] = windows.map((_, i) => {
    const oldest = Number(reply[at + 4 + 2 * i]);
    return { count: Number(reply[at + 3 + 2 * i]), oldestMs: oldest < 0 ? null : oldest };
  });
  return toDecision(windows, Number(reply[at + 2]), reply[at] === 1, Number(reply[at + 1]), counts);
}

/** What a Redis store lets a store on the same connection put in one script with its own check. */
interface RedisLog {
  client: Redis;
  prefix: string;
  windows: readonly RateLimitWindow[];
}
const redisLogs = new WeakMap<RateLimitStore, RedisLog>();

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
  client.defineCommand('rateLimitCheckGuarded', { numberOfKeys: 2, lua: GUARDED_RATE_LIMIT_LUA });

  function argsFor(windows: readonly RateLimitWindow[]): number[] {
    let args = windowArgs.get(windows);
    if (!args) {
      args = windowArgsOf(windows);
      windowArgs.set(windows, args);
    }
    return args;
  }

  const nowArg = () => (opts.clock ? Math.floor(opts.clock()) : -1);
  const nextMember = () => {
    seq = (seq + 1) % Number.MAX_SAFE_INTEGER;
    return `${instanceId}:${seq}`;
  };

  async function decide(key: string, member: string, windows: readonly RateLimitWindow[]): Promise<RateLimitDecision> {
    const reply = await client.rateLimitCheck(prefix + key, nowArg(), member, ...argsFor(windows));
    return decisionAt(reply, 0, windows);
  }

  const store: RateLimitStore = {
    kind: 'redis',
    check: (key, windows = opts.windows) => decide(key, nextMember(), windows),
    peek: (key, windows = opts.windows) => decide(key, '', windows),
    async checkGuarded(guard, guardKey, key, windows = opts.windows) {
      const log = redisLogs.get(guard);
      if (log?.client !== client) return checkAfterPeek(guard, guardKey, () => store.check(key, windows));
      const guardArgs = argsFor(log.windows);
      const reply = await client.rateLimitCheckGuarded(log.prefix + guardKey, prefix + key, nowArg(), log.windows.length, ...guardArgs, nextMember(), ...argsFor(windows));
      const guarded = decisionAt(reply, 0, log.windows);
      return { guard: guarded, decision: guarded.allowed ? decisionAt(reply, 3 + 2 * log.windows.length, windows) : null };
    },
    async close() {
      if (!opts.ownsClient) return;
      // QUIT lets in-flight checks finish; a client that is not connected has nothing to flush.
      if (client.status === 'ready') await client.quit().catch(() => client.disconnect());
      else client.disconnect();
    },
  };
  redisLogs.set(store, { client, prefix, windows: opts.windows });
  return store;
}
