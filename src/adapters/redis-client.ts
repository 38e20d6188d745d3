import { Redis } from 'ioredis';

const LOG_EVERY_MS = 10_000;

/** Reconnection errors repeat on every retry; one line per interval is enough to see the outage. */
export function redisErrorLogger(log: { warn(obj: object, msg: string): void }, message: string): (err: Error) => void {
  let lastErrorMs = 0;
  return (err) => {
    if (Date.now() - lastErrorMs < LOG_EVERY_MS) return;
    lastErrorMs = Date.now();
    log.warn({ err: err.message }, message);
  };
}

/**
 * A Redis connection that never hangs its caller: with no offline queue a command issued while
 * disconnected fails at once, and it reconnects in the background. A subscriber passes
 * `offlineQueue` so its SUBSCRIBE waits for the connection instead of failing.
 */
export function createRedisClient(url: string, opts: { onError: (err: Error) => void; commandTimeoutMs?: number; offlineQueue?: boolean }): Redis {
  const client = new Redis(url, {
    ...(opts.commandTimeoutMs === undefined ? {} : { commandTimeout: opts.commandTimeoutMs }),
    enableOfflineQueue: opts.offlineQueue ?? false,
    maxRetriesPerRequest: 0,
    connectTimeout: 2000,
    retryStrategy: (attempt) => Math.min(attempt * 200, 2000),
  });
  client.on('error', opts.onError);
  return client;
}
