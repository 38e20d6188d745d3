/**
 * Cost of one rate-limiter check on each store. Run with `npm run bench:ratelimit`; the Redis
 * store is measured when REDIS_URL is set. Two states per store: fresh keys (a handful of entries
 * in each log) and full logs (1,000 entries in the hour window, the largest a key can hold at the
 * default limits), because the sliding log's cost grows with its length.
 */
import os from 'node:os';
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { loadConfig } from '../src/config/config.js';
import { createMemoryRateLimitStore } from '../src/adapters/rate-limit/memory-rate-limit.store.js';
import { createRedisRateLimitStore } from '../src/adapters/rate-limit/redis-rate-limit.store.js';
import { windowsFromSettings, type RateLimitStore } from '../src/domain/rate-limiter.port.js';

const windows = windowsFromSettings({ perSecond: 5, perMinute: 60, perHour: 1000 });
const ROUNDS = 5;

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
}

/**
 * A fake clock that moves `stepMs` per check while checks cycle over `keys` keys, so each key is
 * seen once per `keys * stepMs` ms: at 1 s per key it stays under the second and minute limits
 * and fills its hour log, which is the steady state of a key used at its hourly quota.
 */
function workload(keyCount: number, stepMs: number) {
  const keys = Array.from({ length: keyCount }, () => randomBytes(8).toString('hex'));
  let now = 1_750_000_000_000;
  let i = 0;
  return {
    clock: () => now,
    next(): string {
      now += stepMs;
      return keys[i++ % keyCount] as string;
    },
  };
}

/** Runs `calls` checks with `concurrency` in flight; returns microseconds per check (wall time / calls). */
async function timeChecks(store: RateLimitStore, next: () => string, calls: number, concurrency: number): Promise<number> {
  const start = process.hrtime.bigint();
  let issued = 0;
  const worker = async () => {
    while (issued < calls) {
      issued++;
      await store.check(next());
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  return Number(process.hrtime.bigint() - start) / 1000 / calls;
}

async function rounds(label: string, run: () => Promise<number>): Promise<number> {
  await run(); // warm-up: JIT, connection, script cache
  const results: number[] = [];
  for (let r = 0; r < ROUNDS; r++) results.push(await run());
  const result = median(results);
  console.log(`  ${label.padEnd(52)} ${result.toFixed(2).padStart(8)} us per check (rounds ${Math.min(...results).toFixed(2)}-${Math.max(...results).toFixed(2)})`);
  return result;
}

async function benchMemory(): Promise<void> {
  console.log('memory store:');
  const fresh = workload(100_000, 10);
  const freshStore = createMemoryRateLimitStore({ windows, clock: fresh.clock });
  await rounds('fresh keys (100k keys, <= 5 entries each)', () => timeChecks(freshStore, fresh.next, 200_000, 1));
  const full = workload(1000, 1);
  const fullStore = createMemoryRateLimitStore({ windows, clock: full.clock });
  await timeChecks(fullStore, full.next, 1000 * 1100, 1);
  await rounds('full logs (1k keys x 1,000 entries)', () => timeChecks(fullStore, full.next, 200_000, 1));
}

async function benchRedis(url: string): Promise<void> {
  const client = new Redis(url, { enableOfflineQueue: true });
  const prefix = `bench-rl-${randomBytes(4).toString('hex')}:`;
  const info = await client.info('server');
  console.log(`redis store (${/redis_version:(\S+)/.exec(info)?.[1] ?? '?'} at ${url}, one connection):`);
  const fresh = workload(100_000, 10);
  const freshStore = createRedisRateLimitStore({ client, windows, clock: fresh.clock, keyPrefix: prefix });
  await rounds('fresh keys, sequential (latency)', () => timeChecks(freshStore, fresh.next, 5_000, 1));
  await rounds('fresh keys, 32 in flight (throughput)', () => timeChecks(freshStore, fresh.next, 20_000, 32));
  const full = workload(50, 20);
  const fullStore = createRedisRateLimitStore({ client, windows, clock: full.clock, keyPrefix: prefix });
  await timeChecks(fullStore, full.next, 50 * 1100, 32);
  await rounds('full logs (50 keys x 1,000 entries), sequential', () => timeChecks(fullStore, full.next, 5_000, 1));
  await rounds('full logs, 32 in flight', () => timeChecks(fullStore, full.next, 20_000, 32));
  const serverClock = createRedisRateLimitStore({ client, windows, keyPrefix: prefix });
  const key = workload(100_000, 0);
  await rounds('Redis server clock (TIME), fresh keys, sequential', () => timeChecks(serverClock, key.next, 5_000, 1));
  await deleteByPrefix(client, prefix);
  await client.quit();
}

async function deleteByPrefix(client: Redis, prefix: string): Promise<void> {
  let cursor = '0';
  do {
    const [nextCursor, keys] = await client.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
    if (keys.length > 0) await client.unlink(...keys);
    cursor = nextCursor;
  } while (cursor !== '0');
}

const config = loadConfig();
console.log(`rate-limit benchmark: node ${process.version}, ${os.cpus().length} cpus (${os.cpus()[0]?.model ?? 'unknown'}), limits 5/s, 60/min, 1000/h`);
await benchMemory();
if (config.redisUrl) await benchRedis(config.redisUrl);
else console.log('redis store: skipped (set REDIS_URL to measure it)');
