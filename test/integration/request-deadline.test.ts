import { connect, type Socket } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestContext, type TestContext } from '../helpers/test-context.js';
import { listenLocal } from '../helpers/listen-local.js';

/*
 * Issue 59: unauthenticated connections sending `POST /api/v1/payments` with a large
 * Content-Length, one byte every 10 s, were never closed. Each listener now cuts a request not
 * received within REQUEST_TIMEOUT_MS (408, connection closed) and holds at most
 * MAX_CONNECTIONS_PER_LISTENER connections.
 */

const DEADLINE_MS = 1500;
/** The cut comes up to a check interval past the deadline, and this machine is often busy. */
const SLACK_MS = 5000;

interface Received {
  closed: boolean;
  text: string;
}

async function portOf(app: FastifyInstance): Promise<number> {
  return Number(new URL(await listenLocal(app)).port);
}

/** A raw connection; its errors (the server's reset of a refused one) show as its closing. */
async function open(port: number): Promise<Socket> {
  const socket = connect(port, '127.0.0.1');
  socket.on('error', () => undefined);
  await new Promise<void>((resolve) => socket.once('connect', resolve));
  return socket;
}

/** What the server sent until it closed the connection, or until `withinMs` passed (`closed: false`). */
function received(socket: Socket, withinMs: number): Promise<Received> {
  return new Promise((resolve) => {
    let text = '';
    socket.on('data', (chunk: Buffer) => (text += chunk.toString('latin1')));
    const timer = setTimeout(() => resolve({ closed: false, text }), withinMs);
    socket.once('close', () => {
      clearTimeout(timer);
      resolve({ closed: true, text });
    });
  });
}

/** Sends `head`, then one byte of body every 300 ms until the connection closes; what came back. */
async function trickle(port: number, head: string): Promise<Received> {
  const socket = await open(port);
  socket.write(head);
  const drip = setInterval(() => socket.write(' '), 300);
  try {
    return await received(socket, DEADLINE_MS + SLACK_MS);
  } finally {
    clearInterval(drip);
    socket.destroy();
  }
}

/** A request sent in parts `gapMs` apart, answered and closed (`Connection: close`). */
async function exchange(port: number, parts: string[], gapMs = 0): Promise<Received> {
  const socket = await open(port);
  const answer = received(socket, DEADLINE_MS + SLACK_MS);
  for (const [i, part] of parts.entries()) {
    if (i > 0) await new Promise((resolve) => setTimeout(resolve, gapMs));
    socket.write(part);
  }
  try {
    return await answer;
  } finally {
    socket.destroy();
  }
}

const statusLines = (text: string) => text.match(/HTTP\/1\.1 \d{3}[^\r]*/g) ?? [];

async function until(check: () => Promise<boolean>, withinMs: number): Promise<void> {
  const end = Date.now() + withinMs;
  while (!(await check())) {
    if (Date.now() > end) throw new Error('condition not reached in time');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

const connectionsOf = (app: FastifyInstance) => new Promise<number>((resolve, reject) => app.server.getConnections((err, n) => (err ? reject(err) : resolve(n))));

describe('the request deadline (REQUEST_TIMEOUT_MS)', () => {
  let ctx: TestContext;
  let apiPort: number;
  let adminPort: number;
  let apiKey: string;

  beforeAll(async () => {
    ctx = await createTestContext({ config: { requestTimeoutMs: DEADLINE_MS } });
    apiPort = await portOf(ctx.app);
    adminPort = await portOf(ctx.admin);
    apiKey = (await ctx.partner()).apiKey;
  });
  afterAll(() => ctx.close());

  it('cuts an unauthenticated request whose body trickles, on both listeners: 408, then the connection closed', async () => {
    // The service answers 401 (or 413) at once, but Node then reads the rest of the body to keep
    // the connection: that read is what the deadline ends.
    const heads = [
      [apiPort, 'POST /api/v1/payments HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n'],
      [adminPort, 'POST /admin/partners HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n'],
    ] as const;
    for (const [port, head] of heads) {
      const { closed, text } = await trickle(port, head);
      expect(closed, `port ${port} closed the connection`).toBe(true);
      expect(statusLines(text).at(-1)).toBe('HTTP/1.1 408 Request Timeout');
    }
  });

  it("cuts an authenticated body that trickles with the service's 408", async () => {
    const head = `POST /api/v1/payments HTTP/1.1\r\nHost: 127.0.0.1\r\nX-API-Key: ${apiKey}\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{`;
    const { closed, text } = await trickle(apiPort, head);
    expect(closed).toBe(true);
    expect(statusLines(text)).toEqual(['HTTP/1.1 408 Request Timeout']);
    expect(text).toMatch(/\r\nConnection: close\r\n/i);
    const requestId = /\r\nX-Request-Id: ([^\r]+)\r\n/i.exec(text)?.[1];
    expect(requestId).toMatch(/^[0-9a-f-]{36}$/);
    expect(JSON.parse(text.slice(text.indexOf('\r\n\r\n') + 4))).toEqual({ statusCode: 408, error: 'Request Timeout', message: 'Request was not received in time', code: 'request_timeout', requestId });
  });

  it('closes a connection that sends nothing by the same deadline', async () => {
    const socket = await open(apiPort);
    try {
      expect((await received(socket, DEADLINE_MS + SLACK_MS)).closed).toBe(true);
    } finally {
      socket.destroy();
    }
  });

  it('answers requests that arrive within it, a slow one included', async () => {
    const live = await exchange(apiPort, ['GET /api/v1/health/live HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n']);
    expect(statusLines(live.text)).toEqual(['HTTP/1.1 200 OK']);

    const body = JSON.stringify({ userId: 'deadline-user', fcmToken: 'deadline-token', platform: 'android' });
    const head = `POST /api/v1/devices HTTP/1.1\r\nHost: 127.0.0.1\r\nX-API-Key: ${apiKey}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n`;
    const half = Math.floor(body.length / 2);
    const slow = await exchange(apiPort, [head, body.slice(0, half), body.slice(half)], DEADLINE_MS / 4);
    expect(slow.closed).toBe(true);
    expect(statusLines(slow.text)).toEqual(['HTTP/1.1 201 Created']);
  });
});

describe('the connection bound (MAX_CONNECTIONS_PER_LISTENER)', () => {
  let ctx: TestContext;

  beforeAll(async () => {
    ctx = await createTestContext({ config: { maxConnectionsPerListener: 3 } });
  });
  afterAll(() => ctx.close());

  it('closes a connection past the bound on both listeners, and takes new ones once others close', async () => {
    for (const app of [ctx.app, ctx.admin]) {
      const port = await portOf(app);
      const held = await Promise.all([open(port), open(port), open(port)]);
      try {
        await until(async () => (await connectionsOf(app)) === 3, SLACK_MS);
        const extra = await open(port);
        const refused = await received(extra, SLACK_MS);
        extra.destroy();
        expect(refused).toEqual({ closed: true, text: '' });
        expect(held.every((socket) => !socket.destroyed && socket.readyState === 'open')).toBe(true);
      } finally {
        for (const socket of held) socket.destroy();
      }
      await until(async () => (await connectionsOf(app)) === 0, SLACK_MS);
      // Any answer will do (the admin listener has no such path): the connection was taken.
      const after = await exchange(port, ['GET /api/v1/health/live HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n']);
      expect(statusLines(after.text)).toHaveLength(1);
    }
  });
});
