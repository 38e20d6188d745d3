import { randomUUID } from 'node:crypto';
import { createRedisClient, redisErrorLogger } from './redis-client.js';
import type { InvoiceCache } from './invoice-cache.js';
import type { Logger } from '../domain/logger.port.js';

const CHANNEL = 'gpc:invoice-cache:forget';

interface ForgetMessage {
  from: string;
  ids: string[];
}

function parse(raw: string): ForgetMessage | null {
  try {
    const msg = JSON.parse(raw) as Partial<ForgetMessage>;
    return typeof msg.from === 'string' && Array.isArray(msg.ids) ? { from: msg.from, ids: msg.ids.filter((id) => typeof id === 'string') } : null;
  } catch {
    return null;
  }
}

/**
 * Shares invalidations between instances over Redis pub/sub: each instance's forget() reaches
 * every other instance's cache at once. A message missed while disconnected cannot be replayed,
 * so a subscriber that reconnects drops its whole cache; an outage costs reads, never freshness
 * beyond the cache's TTL.
 */
export async function withInvoiceCacheBus(cache: InvoiceCache, redisUrl: string, log: Logger): Promise<InvoiceCache & { close(): Promise<void> }> {
  const self = randomUUID();
  const onError = redisErrorLogger(log, 'invoice cache Redis connection error');
  const pub = createRedisClient(redisUrl, { onError });
  const sub = createRedisClient(redisUrl, { onError, offlineQueue: true });
  let connectedBefore = false;
  sub.on('ready', () => {
    if (connectedBefore) cache.clear();
    connectedBefore = true;
  });
  sub.on('message', (_channel: string, raw: string) => {
    const msg = parse(raw);
    if (msg && msg.from !== self) cache.forget(msg.ids);
  });
  // Start-up never waits on an outage: ioredis subscribes (and resubscribes) once it connects.
  const subscribed = sub.subscribe(CHANNEL).then(() => true, () => false);
  const timeout = new Promise<false>((resolve) => setTimeout(() => resolve(false), 2000).unref());
  if (!(await Promise.race([subscribed, timeout]))) log.warn({}, 'invoice cache bus not subscribed at start; retrying in the background');

  function publish(ids: string[]): void {
    if (ids.length === 0) return;
    pub.publish(CHANNEL, JSON.stringify({ from: self, ids } satisfies ForgetMessage)).catch(onError);
  }

  return {
    get: cache.get,
    mark: cache.mark,
    remember: cache.remember,
    clear: cache.clear,
    refresh(rows, mark) {
      cache.refresh(rows, mark);
      publish(rows.map((r) => r.id));
    },
    forget(ids) {
      const list = [...ids];
      cache.forget(list);
      publish(list);
    },
    async close() {
      sub.disconnect();
      pub.disconnect();
    },
  };
}
