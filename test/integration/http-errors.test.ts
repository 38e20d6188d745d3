import { connect } from 'node:net';
import { Writable } from 'node:stream';
import type { FastifyInstance, InjectOptions } from 'fastify';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createTestContext, type TestContext } from '../helpers/test-context.js';
import { REG } from '../helpers/fixtures.js';
import { testConfig } from '../helpers/test-config.js';
import { startDatabaseProxy } from '../helpers/tcp-proxy.js';

let ctx: TestContext;
let key: string;

beforeAll(async () => {
  ctx = await createTestContext({ config: { bodyLimitBytes: 2048, keyRotationGraceMs: 0 } });
  key = (await ctx.partner()).apiKey;
});
afterAll(() => ctx.close());

const bad = (...message: string[]) => ({ statusCode: 400, message, error: 'Bad Request' });
const adminPost = (url: string, payload: string | object, headers: Record<string, string> = {}) =>
  ctx.admin.inject({
    method: 'POST',
    url,
    payload,
    headers: { authorization: `Bearer ${ctx.config.adminToken}`, 'content-type': 'application/json', ...headers },
  });

describe('400 body shape', () => {
  it('rejects zero and several invoice filters', async () => {
    const none = await ctx.api(key, { method: 'GET', url: '/api/v1/invoices' });
    expect(none.statusCode).toBe(400);
    expect(none.json()).toEqual(bad('exactly one of ttd, vehicle or taxRef must be given'));
    const two = await ctx.api(key, { method: 'GET', url: `/api/v1/invoices?ttd=${REG}&vehicle=X` });
    expect(two.json()).toEqual(bad('exactly one of ttd, vehicle or taxRef must be given'));
  });

  it('rejects unknown query parameters, one message per violation', async () => {
    const res = await ctx.api(key, { method: 'GET', url: `/api/v1/invoices?ttd=${REG}&foo=1&bar=2` });
    expect(res.statusCode).toBe(400);
    const body = res.json<{ message: string[] }>();
    expect(body.message).toEqual(expect.arrayContaining(['query parameter foo should not exist', 'query parameter bar should not exist']));
  });

  it('rejects an empty filter value', async () => {
    const res = await ctx.api(key, { method: 'GET', url: '/api/v1/invoices?ttd=' });
    expect(res.statusCode).toBe(400);
    expect(res.json<{ message: string[] }>().message[0]).toMatch(/ttd/);
  });

  it('rejects unknown and wrongly typed body fields with one entry each', async () => {
    const res = await adminPost('/admin/partners', { name: 42, extra: true, qrStandard: 'nope' });
    expect(res.statusCode).toBe(400);
    const body = res.json<{ statusCode: number; message: string[]; error: string }>();
    expect(body.statusCode).toBe(400);
    expect(body.error).toBe('Bad Request');
    expect(body.message).toContain('property extra should not exist');
    expect(body.message).toContain('name must be of type string');
    expect(body.message.some((m) => m.startsWith('qrStandard'))).toBe(true);
  });

  it('answers malformed JSON with 400, never 500', async () => {
    const res = await adminPost('/admin/partners', '{"name": "x",');
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual(bad('body must be valid JSON'));
  });

  it('answers an oversized body with 413', async () => {
    const res = await adminPost('/admin/partners', { name: 'x'.repeat(20_000) });
    expect(res.statusCode).toBe(413);
    expect(res.json()).toMatchObject({ statusCode: 413, error: 'Payload Too Large' });
  });
});

describe('authentication', () => {
  const search = (headers: Record<string, string>) =>
    ctx.app.inject({ method: 'GET', url: `/api/v1/invoices?ttd=${REG}`, headers });

  it('answers 401 for a missing, malformed or unknown key', async () => {
    const variants: Record<string, string>[] = [{}, { 'x-api-key': 'nope' }, { 'x-api-key': `gpk_sandbox_${'A'.repeat(32)}` }];
    for (const headers of variants) {
      const res = await search(headers);
      expect(res.statusCode).toBe(401);
      expect(res.json()).toEqual({ statusCode: 401, message: 'Invalid or missing API key', error: 'Unauthorized' });
    }
  });

  it('answers 401 for a key of the other environment', async () => {
    const live = await ctx.partner({ environment: 'production' });
    expect(live.apiKey.startsWith('gpk_live_')).toBe(true);
    expect((await search({ 'x-api-key': live.apiKey })).statusCode).toBe(401);
  });

  it('answers 403 for an inactive partner and 200 again once reactivated', async () => {
    const p = await ctx.partner({ active: false });
    const res = await search({ 'x-api-key': p.apiKey });
    expect(res.statusCode).toBe(403);
    expect(res.json()).toEqual({ statusCode: 403, message: 'Partner account is inactive', error: 'Forbidden' });
    await ctx.admin.inject({ method: 'PATCH', url: `/admin/partners/${p.id}`, payload: { active: true }, headers: { authorization: `Bearer ${ctx.config.adminToken}` } });
    expect((await search({ 'x-api-key': p.apiKey })).statusCode).toBe(200);
  });

  it('refuses a rotated-out key once its grace period is over', async () => {
    const p = await ctx.partner();
    const rotated = await adminPost(`/admin/partners/${p.id}/keys`, {});
    expect(rotated.statusCode).toBe(201);
    const { apiKey } = rotated.json<{ apiKey: string }>();
    expect((await search({ 'x-api-key': p.apiKey })).statusCode).toBe(401);
    expect((await search({ 'x-api-key': apiKey })).statusCode).toBe(200);
  });

  it('does not require a key on the health endpoints', async () => {
    const live = await ctx.app.inject({ method: 'GET', url: '/api/v1/health/live' });
    expect(live.statusCode).toBe(200);
    expect(live.json<{ status: string; timestamp: string }>().status).toBe('ok');
    const ready = await ctx.app.inject({ method: 'GET', url: '/api/v1/health/ready' });
    expect(ready.json()).toMatchObject({ status: 'ok', db: 'ok' });
    expect(Number.isNaN(Date.parse(ready.json<{ timestamp: string }>().timestamp))).toBe(false);
  });
});

describe('request ids', () => {
  it('puts X-Request-Id on every response and echoes a safe incoming one', async () => {
    const minted = await ctx.app.inject({ method: 'GET', url: '/api/v1/health/live' });
    expect(minted.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
    const echoed = await ctx.app.inject({ method: 'GET', url: '/api/v1/invoices', headers: { 'x-request-id': 'abc-123' } });
    expect(echoed.statusCode).toBe(401);
    expect(echoed.headers['x-request-id']).toBe('abc-123');
  });
});

describe('readiness', () => {
  it('answers 503 with db down when the database is unreachable', async () => {
    const { databaseUrl } = testConfig();
    // On PostgreSQL readiness pings over a connection of its own, so the database itself must go:
    // a proxy in front of it is cut. The embedded database has only the one connection to lose.
    const via = databaseUrl ? await startDatabaseProxy(databaseUrl) : null;
    const proxy = via?.proxy;
    const local = await createTestContext(via ? { config: { databaseUrl: via.url } } : {});
    try {
      if (proxy) proxy.cut();
      else await local.deps.db.destroy();
      const res = await local.app.inject({ method: 'GET', url: '/api/v1/health/ready' });
      expect(res.statusCode).toBe(503);
      expect(res.json()).toMatchObject({ status: 'unavailable', db: 'down' });
    } finally {
      proxy?.restore();
      await local.close();
      await proxy?.close();
    }
  });
});

/** Input a framework error must never echo back. */
const MARKER = 'echoMarker7Q';

function expectServiceShape(res: { statusCode: number; headers: Record<string, unknown>; body: string }, status: number): void {
  expect(res.statusCode, res.body).toBe(status);
  expect(res.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
  expect(res.body).not.toContain('FST_');
  expect(res.body).not.toContain(MARKER);
  const body = JSON.parse(res.body) as { statusCode: number; message: unknown; error: string };
  expect(Object.keys(body).sort()).toEqual(['error', 'message', 'statusCode']);
  expect(body.statusCode).toBe(status);
  expect(typeof body.error).toBe('string');
  if (status === 400) expect(Array.isArray(body.message) && body.message.every((m) => typeof m === 'string')).toBe(true);
  else expect(typeof body.message).toBe('string');
}

describe('errors the framework raises itself answer in the service shape', () => {
  const adminAuth = () => ({ authorization: `Bearer ${ctx.config.adminToken}` });
  const json = { 'content-type': 'application/json' };
  const cases: Array<{ name: string; status: number; partner: () => InjectOptions; admin: () => InjectOptions }> = [
    {
      name: 'unknown route',
      status: 404,
      partner: () => ({ method: 'GET', url: `/api/v1/${MARKER}` }),
      admin: () => ({ method: 'GET', url: `/admin/${MARKER}`, headers: adminAuth() }),
    },
    {
      name: 'path parameter too long',
      status: 414,
      partner: () => ({ method: 'GET', url: `/api/v1/invoices/ref/${MARKER}${'x'.repeat(250)}`, headers: { 'x-api-key': key } }),
      admin: () => ({ method: 'POST', url: `/admin/partners/${MARKER}${'x'.repeat(250)}/keys`, headers: adminAuth() }),
    },
    {
      name: 'bad percent-encoding',
      status: 400,
      partner: () => ({ method: 'GET', url: `/api/v1/invoices/ref/%ZZ${MARKER}`, headers: { 'x-api-key': key } }),
      admin: () => ({ method: 'POST', url: `/admin/partners/%ZZ${MARKER}/keys`, headers: adminAuth() }),
    },
    {
      name: 'body too large',
      status: 413,
      partner: () => ({ method: 'POST', url: '/api/v1/webhooks', payload: JSON.stringify({ url: MARKER.repeat(2000) }), headers: { 'x-api-key': key, ...json } }),
      admin: () => ({ method: 'POST', url: '/admin/partners', payload: JSON.stringify({ name: MARKER.repeat(2000) }), headers: { ...adminAuth(), ...json } }),
    },
    {
      name: 'unsupported content type',
      status: 415,
      partner: () => ({ method: 'POST', url: '/api/v1/webhooks', payload: MARKER, headers: { 'x-api-key': key, 'content-type': `text/${MARKER}` } }),
      admin: () => ({ method: 'POST', url: '/admin/partners', payload: MARKER, headers: { ...adminAuth(), 'content-type': `text/${MARKER}` } }),
    },
    {
      name: 'malformed JSON',
      status: 400,
      partner: () => ({ method: 'POST', url: '/api/v1/payments/report', payload: `{"${MARKER}":`, headers: { 'x-api-key': key, ...json } }),
      admin: () => ({ method: 'POST', url: '/admin/partners', payload: `{"name": ${MARKER}}`, headers: { ...adminAuth(), ...json } }),
    },
    {
      name: 'JSON with a forbidden prototype property',
      status: 400,
      partner: () => ({ method: 'POST', url: '/api/v1/payments/report', payload: `{"__proto__":{"${MARKER}":1}}`, headers: { 'x-api-key': key, ...json } }),
      admin: () => ({ method: 'POST', url: '/admin/partners', payload: `{"__proto__":{"${MARKER}":1}}`, headers: { ...adminAuth(), ...json } }),
    },
  ];

  it.each(cases)('$name ($status), partner API and admin API', async ({ status, partner, admin }) => {
    expectServiceShape(await ctx.app.inject(partner()), status);
    expectServiceShape(await ctx.admin.inject(admin()), status);
  });

  it('keeps a safe incoming X-Request-Id on errors raised before routing', async () => {
    const res = await ctx.app.inject({ method: 'GET', url: '/api/v1/invoices/ref/%ZZ', headers: { 'x-request-id': 'trace-42' } });
    expect(res.statusCode).toBe(400);
    expect(res.headers['x-request-id']).toBe('trace-42');
  });

  /** Node answers these before Fastify builds a request, so they are only seen over a real socket. */
  async function rawExchange(port: number, request: string): Promise<{ statusCode: number; headers: Record<string, string>; body: string }> {
    const raw = await new Promise<string>((resolve, reject) => {
      const socket = connect(port, '127.0.0.1');
      let data = '';
      socket.on('data', (chunk) => (data += chunk.toString('latin1')));
      socket.on('error', reject);
      socket.on('close', () => resolve(data));
      socket.write(request);
    });
    const [head = '', body = ''] = raw.split('\r\n\r\n');
    const [statusLine = '', ...lines] = head.split('\r\n');
    const headers = Object.fromEntries(lines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]));
    return { statusCode: Number(statusLine.split(' ')[1]), headers, body };
  }

  const listenPort = async (app: FastifyInstance) => Number(new URL(await app.listen({ port: 0, host: '127.0.0.1' })).port);
  const request = (extraHeaderLine: string) => `GET /api/v1/health/live HTTP/1.1\r\nHost: localhost\r\n${extraHeaderLine}\r\n\r\n`;

  it('headers too large (431) and malformed HTTP (400), over a real socket, on both listeners', async () => {
    const local = await createTestContext();
    try {
      for (const app of [local.app, local.admin]) {
        const port = await listenPort(app);
        const tooLarge = await rawExchange(port, request(`X-Filler: ${MARKER.repeat(3000)}`));
        expectServiceShape(tooLarge, 431);
        expect(tooLarge.headers['content-length']).toBe(String(Buffer.byteLength(tooLarge.body)));
        expectServiceShape(await rawExchange(port, request(`${MARKER} header`)), 400);
      }
    } finally {
      await local.close();
    }
  });
});

describe('the log of an unexpected 500', () => {
  it('holds the failure but not the statement or its values', async () => {
    const lines: string[] = [];
    const logger = pino({ level: 'info' }, new Writable({ write: (chunk, _enc, cb) => void (lines.push(String(chunk)), cb()) }));
    const local = await createTestContext({ logger });
    try {
      const partner = await local.partner();
      // A genuine database error, as the database raises it, with a bound value that must not leak.
      const dbError = await local.deps.db
        .selectFrom('partners')
        .select('id')
        .where('id', '=', `${MARKER}-not-a-uuid`)
        .execute()
        .then(() => null, (err: unknown) => err);
      expect(dbError).toBeInstanceOf(Error);
      vi.spyOn(local.deps.services.devices, 'register').mockRejectedValueOnce(dbError);
      const res = await local.api(partner.apiKey, { method: 'POST', url: '/api/v1/devices', payload: { userId: 'u', fcmToken: 't', platform: 'ios' } });
      expect(res.statusCode).toBe(500);
      expect(res.json()).toEqual({ statusCode: 500, message: 'Internal server error', error: 'Internal Server Error' });
      const logged = lines.filter((l) => l.includes('unhandled error'));
      expect(logged).toHaveLength(1);
      const entry = JSON.parse(logged[0] as string) as { err: Record<string, unknown> };
      expect(entry.err.code).toBe('22P02');
      expect(entry.err.message).toMatch(/invalid input syntax for type uuid/);
      expect(logged[0]).not.toContain(MARKER);
      expect(entry.err).not.toHaveProperty('params');
      expect(entry.err).not.toHaveProperty('query');
    } finally {
      await local.close();
    }
  });
});
