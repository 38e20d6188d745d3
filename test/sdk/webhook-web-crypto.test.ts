import { readFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createContext, runInContext } from 'node:vm';
import { build } from 'esbuild';
import { afterAll, beforeAll, describe, expect, expectTypeOf, it } from 'vitest';
import {
  createClient,
  parseWebhook,
  parseWebhookAsync,
  parseWebhookRequest,
  parseWebhookRequestAsync,
  verifyWebhook,
  verifyWebhookAsync,
  verifyWebhookRequest,
  verifyWebhookRequestAsync,
  WebhookVerificationError,
  type PaymentEvent,
  type PaymentEventData,
  type UnknownEventName,
  type WebhookMessage,
} from '../../sdk/src/index.js';
import { deliveryBody, deliveryHeaders } from '../../src/domain/webhook-message.js';
import { captureRealDeliveries, type CapturedDelivery } from '../helpers/real-delivery.js';
import { expressWebhooks } from '../fixtures/webhook-recipes/express.js';
import { fastifyWebhooks } from '../fixtures/webhook-recipes/fastify.js';
import { nextWebhookRoute } from '../fixtures/webhook-recipes/next-route.js';

/*
 * The SDK's Web Crypto verifier (sdk/src/webhook.ts, also `@gov-payment-channel/sdk/webhook`):
 * no `node:` import anywhere in its module graph, run as Workers would (no Buffer, no process,
 * no require), against real deliveries of the service; the typed event unions and their
 * tolerance of what this SDK version does not know; and the Express, Fastify and Next.js recipes
 * of sdk/README.md, each fed real deliveries.
 */

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const SDK_SRC = join(ROOT, 'sdk', 'src');
const RECIPES = join(ROOT, 'test', 'fixtures', 'webhook-recipes');

/** The replayable headers of a captured delivery (what fetch sets itself left out). */
const replayHeaders = (d: CapturedDelivery): Record<string, string> =>
  Object.fromEntries(Object.entries(d.headers).filter(([k]) => !['host', 'content-length', 'connection', 'transfer-encoding'].includes(k)));
const tamperBody = (body: string): string => body.replace('"data":{', '"data":{"forged":true,');
const tamperStandard = (d: CapturedDelivery): Record<string, string> => {
  const h = replayHeaders(d);
  const signature = h['webhook-signature'] ?? '';
  const at = signature.length - 20;
  return { ...h, 'webhook-signature': signature.slice(0, at) + (signature[at] === '0' ? '1' : '0') + signature.slice(at + 1) };
};
const withoutStandard = (d: CapturedDelivery): Record<string, string> => {
  const { 'webhook-signature': _dropped, ...rest } = replayHeaders(d);
  return rest;
};

/** The relative imports of a module of sdk/src, and theirs, transitively. */
async function moduleGraph(entry: string): Promise<Map<string, string>> {
  const seen = new Map<string, string>();
  const visit = async (file: string): Promise<void> => {
    if (seen.has(file)) return;
    const source = await readFile(join(SDK_SRC, file), 'utf8');
    seen.set(file, source);
    for (const [, spec] of source.matchAll(/from\s+'\.\/([^']+)\.js'/g)) await visit(`${spec}.ts`);
  };
  await visit(entry);
  return seen;
}

const withoutComments = (source: string): string => source.replace(/\/\*[\s\S]*?\*\//g, '').replace(/^\s*\/\/.*$/gm, '');

let deliveries: CapturedDelivery[] = [];

beforeAll(async () => {
  deliveries = await captureRealDeliveries();
  expect(deliveries).toHaveLength(4);
}, 120_000);

describe('the Web Crypto verifier', () => {
  it('imports nothing from node: and uses no Node global, in webhook.ts or anything it imports', async () => {
    const graph = await moduleGraph('webhook.ts');
    expect([...graph.keys()].sort()).toEqual(['types.ts', 'webhook-common.ts', 'webhook.ts']);
    for (const [file, source] of graph) {
      const code = withoutComments(source);
      expect(code, file).not.toMatch(/from\s+['"]node:|import\(\s*['"]node:|require\(/);
      expect(code, file).not.toMatch(/\b(Buffer|process|require|__dirname)\b/);
    }
    expect(graph.get('webhook.ts')).toMatch(/crypto\.subtle|\.subtle\b/);
  });

  it('runs where only the web platform exists (as in Workers): no Buffer, process or require', async () => {
    const bundle = await build({ entryPoints: [join(SDK_SRC, 'webhook.ts')], bundle: true, write: false, platform: 'neutral', format: 'iife', globalName: 'gpcWebhook', logLevel: 'silent' });
    const sandbox = createContext({ crypto: globalThis.crypto, TextEncoder, TextDecoder, atob, btoa, Headers, Uint8Array, ArrayBuffer });
    runInContext(bundle.outputFiles[0]?.text ?? '', sandbox);
    expect(runInContext('typeof Buffer + typeof process + typeof require', sandbox)).toBe('undefinedundefinedundefined');
    const isolated = (sandbox as { gpcWebhook: typeof import('../../sdk/src/webhook.js') }).gpcWebhook;
    for (const d of deliveries) {
      expect(await isolated.verifyWebhookRequestAsync(d.body, d.headers, d.secret)).toBe(true);
      expect(await isolated.verifyWebhookRequestAsync(tamperBody(d.body), d.headers, d.secret)).toBe(false);
      // A fetch Headers and the bytes of the body, as a Worker's Request gives them.
      expect(await isolated.verifyWebhookRequestAsync(new TextEncoder().encode(d.body), new Headers(replayHeaders(d)), [d.secret])).toBe(true);
      expect((await isolated.parseWebhookRequestAsync(d.body, d.headers, d.secret)).event).toBe(d.event);
    }
  });

  it('accepts every real delivery, by either header, under either secret form, and agrees with the synchronous verifier', async () => {
    expect(new Set(deliveries.map((d) => d.event))).toEqual(new Set(['webhook.test', 'payment.submitted']));
    for (const d of deliveries) {
      const label = `${d.event} under ${d.secret.slice(0, 6)}…`;
      expect(await verifyWebhookRequestAsync(d.body, d.headers, d.secret), label).toBe(true);
      expect(verifyWebhookRequest(d.body, d.headers, d.secret), label).toBe(true);
      expect(await verifyWebhookRequestAsync(Buffer.from(d.body), new Headers(replayHeaders(d)), ['another-secret-0123456789', d.secret]), label).toBe(true);
      expect(await verifyWebhookAsync(d.body, d.headers['x-service-signature'], d.secret), label).toBe(true);
      expect(verifyWebhook(d.body, d.headers['x-service-signature'], d.secret), label).toBe(true);

      const message = await parseWebhookRequestAsync(d.body, d.headers, d.secret);
      expect(message).toEqual(JSON.parse(d.body));
      expect(message).toEqual(parseWebhookRequest(d.body, d.headers, d.secret));
      expect(await parseWebhookAsync(d.body, d.headers['x-service-signature'], d.secret)).toEqual(parseWebhook(d.body, d.headers['x-service-signature'], d.secret));
    }
  });

  it('refuses a tampered body, a tampered signature, a wrong secret and a stale timestamp, as the synchronous verifier does', async () => {
    const fiveMinutesOn = (d: CapturedDelivery) => () => new Date((Number(d.headers['webhook-timestamp']) + 301) * 1000);
    for (const d of deliveries) {
      const cases: [string, string, Record<string, string>, string, Parameters<typeof verifyWebhookRequest>[3]?][] = [
        ['tampered body', tamperBody(d.body), d.headers, d.secret],
        ['tampered webhook-signature', d.body, tamperStandard(d), d.secret],
        ['no webhook-signature', d.body, withoutStandard(d), d.secret],
        ['wrong secret', d.body, d.headers, `${d.secret}x`],
        ['no secret', d.body, d.headers, ''],
        ['stale timestamp', d.body, d.headers, d.secret, { now: fiveMinutesOn(d) }],
      ];
      for (const [label, body, headers, secret, options] of cases) {
        expect(await verifyWebhookRequestAsync(body, headers, secret, options), label).toBe(false);
        expect(verifyWebhookRequest(body, headers, secret, options), label).toBe(false);
        await expect(parseWebhookRequestAsync(body, headers, secret, options), label).rejects.toBeInstanceOf(WebhookVerificationError);
      }
      // 300 s either way is still fresh.
      expect(await verifyWebhookRequestAsync(d.body, d.headers, d.secret, { now: () => new Date((Number(d.headers['webhook-timestamp']) + 300) * 1000) })).toBe(true);
      expect(await verifyWebhookAsync(tamperBody(d.body), d.headers['x-service-signature'], d.secret)).toBe(false);
      expect(await verifyWebhookAsync(d.body, 'zz'.repeat(32), d.secret)).toBe(false);
      expect(await verifyWebhookAsync(d.body, undefined, d.secret)).toBe(false);
      // X-Service-Signature of the wrong body, beside a good webhook-signature: refused.
      expect(await verifyWebhookRequestAsync(d.body, { ...d.headers, 'x-service-signature': '0'.repeat(64) }, d.secret)).toBe(false);
    }
  });
});

describe('typed events that tolerate what this SDK version does not know', () => {
  it('passes a delivery of an unknown event type, with an unknown status and field, through untyped', async () => {
    const secret = 'whsec_unknown_0123456789';
    const message = { event: 'payment.refunded', eventId: crypto.randomUUID(), deliveryId: crypto.randomUUID(), createdAt: new Date(), data: { id: crypto.randomUUID(), status: 'reversed', refundedAt: '2026-12-01T00:00:00Z' } };
    // Signed by the service's own code, as a future version of it would send the event.
    const body = deliveryBody(message as unknown as Parameters<typeof deliveryBody>[0]);
    const headers = deliveryHeaders(message as unknown as Parameters<typeof deliveryBody>[0], body, [secret], new Date());
    const parsed = await parseWebhookRequestAsync(body, headers, secret);
    expect(parsed).toEqual(JSON.parse(body));
    expect(String(parsed.event)).toBe('payment.refunded');
    expect(parseWebhookRequest(body, headers, secret)).toEqual(parsed);
    // A known event with a field and a cancel reason this version does not know.
    const canceled = { ...message, event: 'payment.canceled', data: { id: message.data.id, invoiceId: crypto.randomUUID(), reason: 'court-order', partnerReference: null, newField: { nested: true } } };
    const canceledBody = deliveryBody(canceled as unknown as Parameters<typeof deliveryBody>[0]);
    const known = await parseWebhookRequestAsync(canceledBody, deliveryHeaders(canceled as unknown as Parameters<typeof deliveryBody>[0], canceledBody, [secret], new Date()), secret);
    expect(known).toEqual(JSON.parse(canceledBody));
  });

  it('passes an events feed with an unknown event type and status through, in list, get, iterate and follow', async () => {
    const unknown = { id: crypto.randomUUID(), type: 'payment.refunded', createdAt: '2026-12-01T00:00:00.000Z', sequence: 2, data: { id: crypto.randomUUID(), status: 'reversed' } };
    const known = { id: crypto.randomUUID(), type: 'payment.confirmed', createdAt: '2026-12-01T00:00:00.000Z', sequence: 1, data: { id: crypto.randomUUID(), amount: 100, partnerReference: null, extra: 'a field added later' } };
    const payment = { id: known.data.id, status: 'refunded', amount: 100, invoiceId: crypto.randomUUID(), invoiceIds: [], partnerReference: null, refundedAt: '2026-12-01T00:00:00.000Z' };
    const served = (body: unknown) => new Response(JSON.stringify(body), { status: 200, headers: { 'content-type': 'application/json' } });
    const api = createClient({
      baseUrl: 'http://127.0.0.1:1/api/v1',
      apiKey: 'gpk_sandbox_unknown',
      fetch: async (url) => {
        const { pathname, searchParams } = new URL(url);
        if (pathname.endsWith(`/events/${unknown.id}`)) return served(unknown);
        if (pathname.endsWith('/events')) {
          const after = searchParams.get('afterSequence');
          return served({ items: after === null ? [unknown, known] : [known, unknown].filter((e) => e.sequence > Number(after)), nextCursor: null });
        }
        if (pathname.endsWith(`/payments/${payment.id}`)) return served(payment);
        return new Response('{}', { status: 404 });
      },
    });
    expect((await api.events.list()).items).toEqual([unknown, known]);
    expect(await api.events.get(unknown.id)).toEqual(unknown);
    const iterated: PaymentEvent[] = [];
    for await (const event of api.events.iterate()) iterated.push(event);
    expect(iterated).toEqual([unknown, known]);
    const stop = new AbortController();
    const followed: PaymentEvent[] = [];
    for await (const event of api.events.follow({ afterSequence: 0, signal: stop.signal, pollIntervalMs: 5 })) {
      followed.push(event);
      if (followed.length === 2) stop.abort();
    }
    expect(followed).toEqual([known, unknown]);
    expect(await api.payments.get(payment.id)).toEqual(payment);
  });

  it('narrows data by the event type, known types only (type-level, checked by tsc)', () => {
    const handle = (event: PaymentEvent): string => {
      switch (event.type) {
        case 'payment.confirmed':
          expectTypeOf(event.data).toEqualTypeOf<PaymentEventData['payment.confirmed']>();
          return `${event.data.id} ${event.data.amount}`;
        case 'payment.canceled':
          expectTypeOf(event.data.reason).toEqualTypeOf<PaymentEventData['payment.canceled']['reason']>();
          return event.data.reason;
        case 'payment.submitted':
        case 'payment.failed':
          return event.data.invoiceId;
        case 'case.opened':
        case 'case.updated':
        case 'case.resolved':
          expectTypeOf(event.data).toEqualTypeOf<PaymentEventData['case.opened']>();
          return event.data.status;
        default:
          // What this SDK version does not know: the name as sent, data untyped.
          expectTypeOf(event.type).toEqualTypeOf<UnknownEventName>();
          expectTypeOf(event.data).toEqualTypeOf<Record<string, unknown>>();
          return String(event.type);
      }
    };
    const onDelivery = (message: WebhookMessage): string | undefined => {
      if (message.event === 'payment.confirmed') return String(message.data.amount);
      if (message.event === 'webhook.test') return message.data.webhookId;
      if (message.event === 'payment.canceled') return message.data.reason;
      return undefined;
    };
    expectTypeOf<Extract<WebhookMessage, { event: 'webhook.test' }>['data']>().toEqualTypeOf<{ webhookId: string; message: string; sentAt: string }>();
    expectTypeOf<Extract<PaymentEvent, { type: 'payment.failed' }>['data']>().toEqualTypeOf<PaymentEventData['payment.failed']>();
    // Not narrowed, `data` has only what every event has in common: no amount.
    // @ts-expect-error amount is payment.confirmed's alone
    const notNarrowed = (event: PaymentEvent): unknown => event.data.amount;
    // @ts-expect-error an event name is not any string: `type` narrows, so a misspelt name has no overlap
    const misspelt = (event: PaymentEvent): boolean => event.type === 'payment.confirmd';
    expect([handle, onDelivery, notNarrowed, misspelt]).toHaveLength(4);
  });
});

describe('raw-body recipes of sdk/README.md, fed real deliveries', () => {
  const received: WebhookMessage[] = [];
  const handle = async (message: WebhookMessage): Promise<void> => {
    received.push(message);
  };
  const servers: { close(): Promise<unknown> | void }[] = [];
  afterAll(async () => {
    for (const s of servers) await s.close();
  });

  /** Posts each real delivery (and a tampered copy) to a receiver; the statuses it answered. */
  async function replay(post: (body: string, headers: Record<string, string>) => Promise<number>): Promise<void> {
    for (const d of deliveries) {
      received.length = 0;
      expect(await post(d.body, replayHeaders(d)), `${d.event}: accepted`).toBe(204);
      expect(received).toEqual([JSON.parse(d.body)]);
      expect(await post(tamperBody(d.body), replayHeaders(d)), `${d.event}: tampered body`).toBe(401);
      expect(await post(d.body, tamperStandard(d)), `${d.event}: tampered signature`).toBe(401);
      expect(received).toHaveLength(1);
    }
  }
  const secrets = () => [...new Set(deliveries.map((d) => d.secret))];
  const over = (url: string) => async (body: string, headers: Record<string, string>) => (await fetch(url, { method: 'POST', body, headers })).status;

  it('Express: express.raw, over HTTP', async () => {
    const server = expressWebhooks(secrets(), handle).listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    servers.push({ close: () => new Promise((resolve) => server.close(resolve)) });
    await replay(over(`http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks/gpc`));
  });

  it('Fastify: a buffer content-type parser, over HTTP', async () => {
    const app = fastifyWebhooks(secrets(), handle);
    servers.push(app);
    const url = await app.listen({ port: 0, host: '127.0.0.1' });
    await replay(over(`${url}/hooks/gpc`));
  });

  it('Next.js route handler: req.text() of a real Request', async () => {
    const POST = nextWebhookRoute(secrets(), handle);
    await replay(async (body, headers) => (await POST(new Request('http://partner.example/api/hooks/gpc', { method: 'POST', body, headers }))).status);
  });

  it('are shown in sdk/README.md as they are here (the SDK imported by its package name)', async () => {
    const readme = await readFile(join(ROOT, 'sdk', 'README.md'), 'utf8');
    for (const file of ['express.ts', 'fastify.ts', 'next-route.ts']) {
      const source = (await readFile(join(RECIPES, file), 'utf8'))
        .replace("'../../../sdk/src/index.js'", "'@gov-payment-channel/sdk'")
        .replace("'../../../sdk/src/webhook.js'", "'@gov-payment-channel/sdk/webhook'");
      const shown = new RegExp(`<!-- recipe: test/fixtures/webhook-recipes/${file.replace('.', '\\.')} -->\\n\`\`\`ts\\n([\\s\\S]*?)\`\`\`\\n`).exec(readme)?.[1];
      expect(shown, `sdk/README.md shows ${file}`).toBe(source);
    }
  });
});
