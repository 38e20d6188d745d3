import net from 'node:net';
import { once } from 'node:events';
import { afterEach, describe, expect, it } from 'vitest';
import { createRateLimitRedisClient } from '../../src/composition/rate-limit.factory.js';
import { createRedisRateLimitStore } from '../../src/adapters/rate-limit/redis-rate-limit.store.js';
import { createRateLimitService } from '../../src/services/rate-limit/rate-limit.service.js';
import { windowsFromSettings } from '../../src/domain/rate-limiter.port.js';
import type { Redis } from 'ioredis';

const windows = windowsFromSettings({ perSecond: 5, perMinute: 60, perHour: 1000 });

/** Parses RESP command arrays out of a byte stream (enough for what ioredis sends). */
function* commands(buffer: { data: string }): Generator<string[]> {
  for (;;) {
    const lines = buffer.data.split('\r\n');
    const header = lines[0] ?? '';
    if (!header.startsWith('*')) return;
    const argc = Number(header.slice(1));
    if (lines.length < 1 + argc * 2 + 1) return;
    const args = Array.from({ length: argc }, (_, i) => lines[2 + i * 2] ?? '');
    buffer.data = lines.slice(1 + argc * 2).join('\r\n');
    yield args;
  }
}

/** A server that completes the handshake, then never answers: the command timeout must fire. */
async function stalledRedis(): Promise<{ url: string; close(): Promise<void> }> {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    const buffer = { data: '' };
    socket.on('data', (chunk) => {
      buffer.data += chunk.toString('utf8');
      for (const [name] of commands(buffer)) {
        const cmd = name?.toUpperCase();
        if (cmd === 'CLIENT') socket.write('+OK\r\n');
        if (cmd === 'INFO') {
          const info = 'redis_version:7.0.0\r\nloading:0\r\n';
          socket.write(`$${Buffer.byteLength(info)}\r\n${info}\r\n`);
        }
      }
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const address = server.address() as net.AddressInfo;
  return {
    url: `redis://127.0.0.1:${address.port}`,
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0)) await c();
});

function limiterOn(client: Redis, failOpen: boolean) {
  const warnings: string[] = [];
  const counts = { rejections: 0, storeErrors: 0 };
  const limiter = createRateLimitService({
    store: createRedisRateLimitStore({ client, windows, ownsClient: true }),
    windows,
    failOpen,
    log: { warn: (_obj, msg) => warnings.push(msg) },
    counters: { rejections: { inc: () => counts.rejections++ }, storeErrors: { inc: () => counts.storeErrors++ } },
  });
  cleanups.push(() => limiter.close());
  return { limiter, warnings, counts };
}

const silent = { warn: () => undefined };

describe('Redis unavailable', () => {
  it('fails open at once when nothing listens, logging once and counting every failure', async () => {
    const client = createRateLimitRedisClient('redis://127.0.0.1:1', 200, silent);
    const { limiter, warnings, counts } = limiterOn(client, true);
    const started = Date.now();
    const outcomes = await Promise.all(Array.from({ length: 5 }, () => limiter.check('k')));
    expect(Date.now() - started).toBeLessThan(500);
    expect(outcomes.map((o) => o.kind)).toEqual(Array(5).fill('bypassed'));
    expect(counts.storeErrors).toBe(5);
    expect(warnings).toEqual(['rate-limit store failed; request allowed (fail-open)']);
  });

  it('fails closed when configured to', async () => {
    const client = createRateLimitRedisClient('redis://127.0.0.1:1', 200, silent);
    const { limiter, counts } = limiterOn(client, false);
    expect((await limiter.check('k')).kind).toBe('unavailable');
    expect(counts.storeErrors).toBe(1);
  });

  it('gives up on a server that stops answering after the command timeout', async () => {
    const stalled = await stalledRedis();
    cleanups.push(() => stalled.close());
    const client = createRateLimitRedisClient(stalled.url, 50, silent);
    await once(client, 'ready');
    const { limiter, counts } = limiterOn(client, true);
    const started = Date.now();
    expect((await limiter.check('k')).kind).toBe('bypassed');
    const elapsed = Date.now() - started;
    expect(elapsed).toBeGreaterThanOrEqual(40);
    expect(elapsed).toBeLessThan(1000);
    expect(counts.storeErrors).toBe(1);
  });
});
