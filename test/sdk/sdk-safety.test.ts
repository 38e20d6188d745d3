import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { inspect } from 'node:util';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ApiError, NetworkError, RedirectError, ResponseTooLargeError, createClient, type ClientOptions, type FetchLike } from '../../sdk/src/index.js';

/*
 * The SDK keeps the key at home (issue 60): it never follows a redirect, to another host least of
 * all, and never reads more of an answer than `maxResponseBytes`. Real sockets throughout, since
 * both are about what crosses them: which server hears a request, and when a connection drops.
 */

const KEY = 'gpk_sandbox_do_not_leak_0123456789';
const MiB = 1024 * 1024;
const DEFAULT_CAP = 4 * MiB;

type Handler = (req: IncomingMessage, res: ServerResponse) => void;

interface Local {
  origin: string;
  requests: { method: string; url: string; headers: IncomingMessage['headers'] }[];
  respond(handler: Handler): void;
  close(): Promise<void>;
}

/** A server on 127.0.0.1 and a port of its own, so two of them are two origins. */
async function local(): Promise<Local> {
  let handler: Handler = (_req, res) => res.writeHead(204).end();
  const requests: Local['requests'] = [];
  const server = createServer((req, res) => {
    requests.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers });
    // Answered before the request body is read: a client that never sends one is not waited for.
    req.resume();
    handler(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    origin: `http://127.0.0.1:${port}`,
    requests,
    respond(h) {
      handler = h;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/**
 * Writes 1 MiB chunks, as fast as the socket takes them, until the client goes away. `safetyStop`
 * ends the answer anyway so that an SDK that reads everything fails the test instead of the
 * machine; `ended` tells the two apart.
 */
function endless(res: ServerResponse, state: { written: number; ended: boolean; closed: Promise<void> }, safetyStop = 96 * MiB): void {
  const chunk = Buffer.alloc(MiB, 'x');
  const gone = () => res.destroyed || res.writableEnded;
  const pump = () => {
    while (!gone()) {
      if (state.written >= safetyStop) {
        state.ended = true;
        res.end();
        return;
      }
      state.written += chunk.byteLength;
      if (!res.write(chunk)) {
        res.once('drain', pump);
        return;
      }
    }
  };
  pump();
}

function streamState(res: ServerResponse): { written: number; ended: boolean; closed: Promise<void> } {
  return { written: 0, ended: false, closed: new Promise<void>((resolve) => res.once('close', () => resolve())) };
}

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => new Error('expected a rejection, got an answer'),
    (e: unknown) => e,
  );
}

describe('SDK redirects', () => {
  let service: Local;
  let elsewhere: Local;
  const sdk = (extra: Partial<ClientOptions> = {}) => createClient({ baseUrl: `${service.origin}/api/v1`, apiKey: KEY, retryBaseMs: 1, ...extra });

  beforeAll(async () => {
    service = await local();
    elsewhere = await local();
  });
  afterEach(() => {
    service.requests.length = 0;
    elsewhere.requests.length = 0;
  });
  afterAll(async () => {
    await service.close();
    await elsewhere.close();
  });

  function expectKeptAtHome(err: unknown): void {
    // inspect shows own properties, the cause chain and the stack: everything a log would get.
    expect(inspect(err, { depth: 10, showHidden: true })).not.toContain(KEY);
    expect(JSON.stringify(err)).not.toContain(KEY);
    expect(err).not.toHaveProperty('headers');
    expect(err).not.toHaveProperty('request');
  }

  it.each([307, 302, 308, 301, 303])('refuses a %i to another origin: the other server hears nothing, the error names status and location', async (status) => {
    const location = `${elsewhere.origin}/steal/payments`;
    service.respond((_req, res) => res.writeHead(status, { location, 'x-request-id': 'req-redirect' }).end('moved'));

    // POST /payments: on a 307 or 308 a follower would resend the body and the idempotency key too.
    const err = await rejection(sdk().payments.create({ invoiceId: '22222222-2222-4222-8222-222222222222', amount: 100 }, { idempotencyKey: 'idem-1' }));
    expect(err).toBeInstanceOf(RedirectError);
    expect(err).toBeInstanceOf(ApiError);
    const redirect = err as RedirectError;
    expect(redirect).toMatchObject({ name: 'RedirectError', status, location, requestId: 'req-redirect', body: undefined });
    expect(redirect.message).toContain(String(status));
    expect(redirect.message).toContain(location);
    expectKeptAtHome(err);

    // A read, retried on 5xx and network errors, is not retried on a redirect either.
    const read = await rejection(sdk({ retries: 3 }).invoices.get('22222222-2222-4222-8222-222222222222'));
    expect(read).toBeInstanceOf(RedirectError);
    expectKeptAtHome(read);

    expect(service.requests.map((r) => r.method)).toEqual(['POST', 'GET']);
    expect(service.requests[0]?.headers['x-api-key']).toBe(KEY);
    expect(elsewhere.requests).toEqual([]);
  });

  it('says so when there is no Location, and redacts the key from one that echoes it', async () => {
    service.respond((_req, res) => res.writeHead(307).end());
    const bare = await rejection(sdk().reports.summary());
    expect(bare).toMatchObject({ name: 'RedirectError', status: 307, location: undefined });
    expect((bare as Error).message).toMatch(/307 without a readable Location/);

    service.respond((_req, res) => res.writeHead(302, { location: `${elsewhere.origin}/?k=${KEY}&again=${encodeURIComponent(KEY)}` }).end());
    const echoed = await rejection(sdk().reports.summary());
    expect((echoed as RedirectError).location).toBe(`${elsewhere.origin}/?k=[redacted]&again=[redacted]`);
    expectKeptAtHome(echoed);
    expect(elsewhere.requests).toEqual([]);
  });

  it("treats a browser's opaque redirect (status 0) as a redirect", async () => {
    // Node's fetch cannot make one; this is what a browser's gives back for redirect: 'manual'.
    const opaque: FetchLike = (_url, init) => {
      expect(init.redirect).toBe('manual');
      const res = new Response(null, { status: 200 });
      Object.defineProperty(res, 'type', { value: 'opaqueredirect' });
      Object.defineProperty(res, 'status', { value: 0 });
      return Promise.resolve(res);
    };
    const err = await rejection(sdk({ fetch: opaque }).payments.get('p-1'));
    expect(err).toMatchObject({ name: 'RedirectError', status: 0, location: undefined });
    expect((err as Error).message).toContain('redirect');
    expectKeptAtHome(err);
  });
});

describe('SDK answer size cap', () => {
  let service: Local;
  const sdk = (extra: Partial<ClientOptions> = {}) => createClient({ baseUrl: `${service.origin}/api/v1`, apiKey: KEY, retryBaseMs: 1, ...extra });

  beforeAll(async () => {
    service = await local();
  });
  afterEach(() => {
    service.requests.length = 0;
  });
  afterAll(() => service.close());

  it('cuts an endless chunked body off just past the default cap and drops the connection', async () => {
    let state: ReturnType<typeof streamState> | undefined;
    service.respond((_req, res) => {
      state = streamState(res);
      res.writeHead(200, { 'content-type': 'application/json' });
      endless(res, state);
    });
    const rssBefore = process.memoryUsage().rss;

    // The timeout is the one the red team's partner had; the cap has to act well within it.
    const err = await rejection(sdk({ timeoutMs: 30_000 }).reports.summary());
    expect(err).toBeInstanceOf(ResponseTooLargeError);
    expect(err).toMatchObject({ name: 'ResponseTooLargeError', status: 200, maxResponseBytes: DEFAULT_CAP });
    expect((err as Error).message).toContain(String(DEFAULT_CAP));

    // The client hung up; the server did not finish: what it wrote is the cap plus what the
    // socket buffers on both sides held when the client stopped reading.
    await state?.closed;
    expect(state?.ended).toBe(false);
    expect(state?.written).toBeGreaterThan(DEFAULT_CAP);
    expect(state?.written).toBeLessThan(DEFAULT_CAP + 48 * MiB);
    expect(process.memoryUsage().rss - rssBefore).toBeLessThan(200 * MiB);
    // Not retried: the same request would be answered the same way.
    expect(service.requests).toHaveLength(1);
  });

  it('applies a configured cap to error answers too, without retrying them', async () => {
    let state: ReturnType<typeof streamState> | undefined;
    service.respond((_req, res) => {
      state = streamState(res);
      res.writeHead(503, { 'content-type': 'text/plain', 'x-request-id': 'req-big' });
      endless(res, state);
    });
    const err = await rejection(sdk({ maxResponseBytes: 64 * 1024, retries: 3 }).invoices.get('i-1'));
    expect(err).toMatchObject({ name: 'ResponseTooLargeError', status: 503, maxResponseBytes: 64 * 1024, requestId: 'req-big' });
    expect((err as Error).message).toContain('65536');
    await state?.closed;
    expect(state?.ended).toBe(false);
    expect(service.requests).toHaveLength(1);
  });

  it('refuses an answer whose Content-Length is over the cap before reading it', async () => {
    let state: ReturnType<typeof streamState> | undefined;
    service.respond((_req, res) => {
      state = streamState(res);
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(64 * MiB) });
      // One chunk, then nothing: only a client that believed the length would wait for the rest.
      res.write(Buffer.alloc(1024, ' '));
    });
    const err = await rejection(sdk({ maxResponseBytes: MiB, timeoutMs: 10_000, retries: 0 }).reports.summary());
    expect(err).toMatchObject({ name: 'ResponseTooLargeError', status: 200, maxResponseBytes: MiB });
    await state?.closed;
  });

  it('reads a body just under, or exactly at, the cap', async () => {
    // A JSON string of `size` bytes in all: quotes plus padding.
    const jsonOf = (size: number) => `"${'a'.repeat(size - 2)}"`;
    for (const [cap, size, chunked] of [
      [DEFAULT_CAP, DEFAULT_CAP - 1024, true],
      [DEFAULT_CAP, DEFAULT_CAP - 1024, false],
      [64 * 1024, 64 * 1024, true],
      [64 * 1024, 64 * 1024, false],
    ] as const) {
      service.respond((_req, res) => {
        const body = jsonOf(size);
        res.writeHead(200, chunked ? { 'content-type': 'application/json' } : { 'content-type': 'application/json', 'content-length': String(body.length) });
        // Several writes, so the reader counts across chunks.
        for (let at = 0; at < body.length; at += 100_000) res.write(body.slice(at, at + 100_000));
        res.end();
      });
      const options = cap === DEFAULT_CAP ? {} : { maxResponseBytes: cap };
      const answer = await sdk(options).reports.summary();
      expect(answer).toHaveLength(size - 2);
    }

    // One byte more is refused, counted in bytes rather than characters.
    service.respond((_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end(`"${'é'.repeat(3)}"`));
    expect(await sdk({ maxResponseBytes: 8 }).reports.summary()).toBe('ééé');
    await expect(sdk({ maxResponseBytes: 7 }).reports.summary()).rejects.toBeInstanceOf(ResponseTooLargeError);
  });

  it('still times out, as a NetworkError, on a body that stalls', async () => {
    service.respond((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('{"total":');
    });
    const err = await rejection(sdk({ timeoutMs: 200, retries: 0 }).reports.summary());
    expect(err).toBeInstanceOf(NetworkError);
    expect((err as NetworkError).timedOut).toBe(true);
  });

  it('works with a custom fetch whose Response has no body stream', async () => {
    const noStream = (text: string | null, status = 200): FetchLike => () => {
      const res = new Response(text, { status, headers: { 'content-type': 'application/json' } });
      // As a fetch of its own might build it: the text readable, no stream to read it from.
      Object.defineProperty(res, 'body', { value: null });
      return Promise.resolve(res);
    };
    expect(await sdk({ fetch: noStream('{"status":"ok"}') }).health.live()).toEqual({ status: 'ok' });
    expect(await sdk({ fetch: () => Promise.resolve(new Response(null, { status: 204 })) }).health.live()).toBeUndefined();
    await expect(sdk({ fetch: noStream(`"${'a'.repeat(100)}"`), maxResponseBytes: 50 }).health.live()).rejects.toBeInstanceOf(ResponseTooLargeError);
  });

  it('refuses a cap that is not a number of bytes', () => {
    for (const maxResponseBytes of [0, -1, Number.NaN, 0.5]) {
      expect(() => sdk({ maxResponseBytes })).toThrow(TypeError);
    }
  });
});
