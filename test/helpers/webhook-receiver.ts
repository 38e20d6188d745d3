import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';

export type ReceiverBehaviour = 'ok' | 'fail' | 'hang';

export interface ReceivedRequest {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: string;
  /** When the request's body had arrived (epoch ms). */
  at: number;
}

/** A delivery that arrived while another with the same `webhook-id` was still unanswered. */
export interface OverlappingDelivery {
  webhookId: string;
  at: number;
  /** Deliveries of this id unanswered when it arrived, itself included. */
  inFlight: number;
}

export interface WebhookReceiver {
  url: string;
  port: number;
  received: ReceivedRequest[];
  /** Requests the receiver's `accept` check refused (answered 401). */
  refused: ReceivedRequest[];
  overlapping: OverlappingDelivery[];
  close(): Promise<void>;
}

/**
 * A real HTTP receiver on 127.0.0.1. Each request takes the next behaviour from `script`
 * (then `ok`): `fail` answers 500, `hang` never answers. With `accept`, a request it refuses (a
 * receiver's signature check) is answered 401 whatever the script says.
 */
export async function startReceiver(
  script: ReceiverBehaviour[] = [],
  opts: { delayMs?: number; accept?: (request: ReceivedRequest) => boolean } = {},
): Promise<WebhookReceiver> {
  const received: ReceivedRequest[] = [];
  const refused: ReceivedRequest[] = [];
  const overlapping: OverlappingDelivery[] = [];
  const inFlight = new Map<string, number>();
  const queue = [...script];
  const server = createServer((req, res) => {
    const webhookId = req.headers['webhook-id'];
    if (typeof webhookId === 'string') {
      const now = (inFlight.get(webhookId) ?? 0) + 1;
      inFlight.set(webhookId, now);
      if (now > 1) overlapping.push({ webhookId, at: Date.now(), inFlight: now });
      // Answered, or given up by the sender: no longer in flight either way.
      res.once('close', () => inFlight.set(webhookId, (inFlight.get(webhookId) ?? 1) - 1));
    }
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const request = { method: req.method ?? '', url: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks).toString('utf8'), at: Date.now() };
      received.push(request);
      if (opts.accept && !opts.accept(request)) {
        refused.push(request);
        res.writeHead(401, { 'content-type': 'text/plain' }).end('bad signature');
        return;
      }
      const behaviour = queue.shift() ?? 'ok';
      if (behaviour === 'hang') return;
      setTimeout(() => {
        res.writeHead(behaviour === 'ok' ? 200 : 500, { 'content-type': 'text/plain' });
        res.end(behaviour);
      }, opts.delayMs ?? 0);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hook`,
    port,
    received,
    refused,
    overlapping,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** Receivers a suite starts as it goes, closed together (and forgotten) by closeAll. */
export function receiverPool() {
  const open: WebhookReceiver[] = [];
  return {
    async start(...args: Parameters<typeof startReceiver>): Promise<WebhookReceiver> {
      const r = await startReceiver(...args);
      open.push(r);
      return r;
    },
    async closeAll(): Promise<void> {
      await Promise.all(open.splice(0).map((r) => r.close()));
    },
  };
}
