import { connect } from 'node:net';
import { Writable } from 'node:stream';
import type { FastifyInstance, InjectOptions } from 'fastify';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createTestContext, type TestContext } from '../helpers/test-context.js';
import { REG } from '../helpers/fixtures.js';
import { testConfig } from '../helpers/test-config.js';
import { startDatabaseProxy } from '../helpers/tcp-proxy.js';
import { approveAndConfirm, badRequest, cancelPayment, partnerWithInvoice, pay, payOk, requestIdOf } from '../helpers/api.js';

let ctx: TestContext;
let key: string;

beforeAll(async () => {
  ctx = await createTestContext({ config: { bodyLimitBytes: 2048, keyRotationGraceMs: 0 } });
  key = (await ctx.partner()).apiKey;
});
afterAll(() => ctx.close());

type Answer = { headers: Record<string, unknown> };
/** The exact body of any other error answer. */
const failure = (res: Answer, statusCode: number, error: string, code: string, message: string) => ({ statusCode, message, error, code, requestId: requestIdOf(res) });
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
    expect(none.json()).toEqual(badRequest(none, ['', 'exactly one of ttd, vehicle or taxRef must be given']));
    const two = await ctx.api(key, { method: 'GET', url: `/api/v1/invoices?ttd=${REG}&vehicle=X` });
    expect(two.json()).toEqual(badRequest(two, ['', 'exactly one of ttd, vehicle or taxRef must be given']));
  });

  it('rejects unknown query parameters, one message per violation', async () => {
    const res = await ctx.api(key, { method: 'GET', url: `/api/v1/invoices?ttd=${REG}&foo=1&bar=2` });
    expect(res.statusCode).toBe(400);
    const body = res.json<{ message: string[] }>();
    expect(body.message).toEqual(expect.arrayContaining(['query parameter foo should not exist', 'query parameter bar should not exist']));
    expect(res.json<{ errors: unknown[] }>().errors).toEqual(
      expect.arrayContaining([
        { path: '/foo', message: 'query parameter foo should not exist' },
        { path: '/bar', message: 'query parameter bar should not exist' },
      ]),
    );
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
    const { errors } = res.json<{ errors: { path: string; message: string }[] }>();
    expect(errors.map((e) => e.message)).toEqual(body.message);
    expect(errors).toContainEqual({ path: '/extra', message: 'property extra should not exist' });
    expect(errors).toContainEqual({ path: '/name', message: 'name must be of type string' });
    expect(errors.find((e) => e.message.startsWith('qrStandard'))?.path).toBe('/qrStandard');
  });

  it('answers malformed JSON with 400, never 500', async () => {
    const res = await adminPost('/admin/partners', '{"name": "x",');
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual(badRequest(res, ['', 'body must be valid JSON']));
  });

  it('answers an oversized body with 413', async () => {
    const res = await adminPost('/admin/partners', { name: 'x'.repeat(20_000) });
    expect(res.statusCode).toBe(413);
    expect(res.json()).toEqual(failure(res, 413, 'Payload Too Large', 'payload_too_large', 'Request body is too large'));
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
      expect(res.json()).toEqual(failure(res, 401, 'Unauthorized', 'unauthenticated', 'Invalid or missing API key'));
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
    expect(res.json()).toEqual(failure(res, 403, 'Forbidden', 'partner_inactive', 'Partner account is inactive'));
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

function expectServiceShape(res: { statusCode: number; headers: Record<string, unknown>; body: string }, status: number, code: string): void {
  expect(res.statusCode, res.body).toBe(status);
  expect(res.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
  expect(res.body).not.toContain('FST_');
  expect(res.body).not.toContain(MARKER);
  const body = JSON.parse(res.body) as { statusCode: number; message: unknown; error: string; code: string; requestId: string; errors?: unknown };
  expect(Object.keys(body).sort()).toEqual(status === 400 ? ['code', 'error', 'errors', 'message', 'requestId', 'statusCode'] : ['code', 'error', 'message', 'requestId', 'statusCode']);
  expect(body.statusCode).toBe(status);
  expect(body.code).toBe(code);
  expect(body.requestId).toBe(res.headers['x-request-id']);
  expect(typeof body.error).toBe('string');
  if (status === 400) {
    expect(Array.isArray(body.message) && body.message.every((m) => typeof m === 'string')).toBe(true);
    expect(body.errors).toEqual((body.message as string[]).map((message) => ({ path: '', message })));
  } else expect(typeof body.message).toBe('string');
}

describe('errors the framework raises itself answer in the service shape', () => {
  const adminAuth = () => ({ authorization: `Bearer ${ctx.config.adminToken}` });
  const json = { 'content-type': 'application/json' };
  const cases: Array<{ name: string; status: number; code: string; partner: () => InjectOptions; admin: () => InjectOptions }> = [
    {
      name: 'unknown route',
      status: 404,
      code: 'not_found',
      partner: () => ({ method: 'GET', url: `/api/v1/${MARKER}` }),
      admin: () => ({ method: 'GET', url: `/admin/${MARKER}`, headers: adminAuth() }),
    },
    {
      name: 'path parameter too long',
      status: 414,
      code: 'uri_too_long',
      partner: () => ({ method: 'GET', url: `/api/v1/invoices/ref/${MARKER}${'x'.repeat(250)}`, headers: { 'x-api-key': key } }),
      admin: () => ({ method: 'POST', url: `/admin/partners/${MARKER}${'x'.repeat(250)}/keys`, headers: adminAuth() }),
    },
    {
      name: 'bad percent-encoding',
      status: 400,
      code: 'invalid_request',
      partner: () => ({ method: 'GET', url: `/api/v1/invoices/ref/%ZZ${MARKER}`, headers: { 'x-api-key': key } }),
      admin: () => ({ method: 'POST', url: `/admin/partners/%ZZ${MARKER}/keys`, headers: adminAuth() }),
    },
    {
      name: 'body too large',
      status: 413,
      code: 'payload_too_large',
      partner: () => ({ method: 'POST', url: '/api/v1/webhooks', payload: JSON.stringify({ url: MARKER.repeat(2000) }), headers: { 'x-api-key': key, ...json } }),
      admin: () => ({ method: 'POST', url: '/admin/partners', payload: JSON.stringify({ name: MARKER.repeat(2000) }), headers: { ...adminAuth(), ...json } }),
    },
    {
      name: 'unsupported content type',
      status: 415,
      code: 'unsupported_media_type',
      partner: () => ({ method: 'POST', url: '/api/v1/webhooks', payload: MARKER, headers: { 'x-api-key': key, 'content-type': `text/${MARKER}` } }),
      admin: () => ({ method: 'POST', url: '/admin/partners', payload: MARKER, headers: { ...adminAuth(), 'content-type': `text/${MARKER}` } }),
    },
    {
      name: 'malformed JSON',
      status: 400,
      code: 'invalid_request',
      partner: () => ({ method: 'POST', url: '/api/v1/payments/report', payload: `{"${MARKER}":`, headers: { 'x-api-key': key, ...json } }),
      admin: () => ({ method: 'POST', url: '/admin/partners', payload: `{"name": ${MARKER}}`, headers: { ...adminAuth(), ...json } }),
    },
    {
      name: 'JSON with a forbidden prototype property',
      status: 400,
      code: 'invalid_request',
      partner: () => ({ method: 'POST', url: '/api/v1/payments/report', payload: `{"__proto__":{"${MARKER}":1}}`, headers: { 'x-api-key': key, ...json } }),
      admin: () => ({ method: 'POST', url: '/admin/partners', payload: `{"__proto__":{"${MARKER}":1}}`, headers: { ...adminAuth(), ...json } }),
    },
  ];

  it.each(cases)('$name ($status $code), partner API and admin API', async ({ status, code, partner, admin }) => {
    expectServiceShape(await ctx.app.inject(partner()), status, code);
    expectServiceShape(await ctx.admin.inject(admin()), status, code);
  });

  it('keeps a safe incoming X-Request-Id on errors raised before routing', async () => {
    const res = await ctx.app.inject({ method: 'GET', url: '/api/v1/invoices/ref/%ZZ', headers: { 'x-request-id': 'trace-42' } });
    expect(res.statusCode).toBe(400);
    expect(res.headers['x-request-id']).toBe('trace-42');
    expect(res.json()).toMatchObject({ code: 'invalid_request', requestId: 'trace-42' });
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
        expectServiceShape(tooLarge, 431, 'headers_too_large');
        expect(tooLarge.headers['content-length']).toBe(String(Buffer.byteLength(tooLarge.body)));
        expectServiceShape(await rawExchange(port, request(`${MARKER} header`)), 400, 'invalid_request');
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
      expect(res.json()).toEqual(failure(res, 500, 'Internal Server Error', 'internal_error', 'Internal server error'));
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

/*
 * Every code the partner guide promises, each produced by a real request: the body carries the
 * code and the answer's own X-Request-Id (docs/errors.md).
 */
describe('error codes', () => {
  const bodyOf = (res: { json: () => unknown; headers: Record<string, unknown> }) => {
    const body = res.json() as { code: string; requestId: string };
    expect(body.requestId).toBe(res.headers['x-request-id']);
    return body;
  };
  const sourceFault = (source: string, mode: string, delayMs?: number) => ctx.sim('/__control/faults', { source, mode, delayMs });

  it('invalid_request: one errors entry per refused field, path a JSON pointer', async () => {
    const { partner } = await partnerWithInvoice(ctx, 'mof');
    const res = await pay(ctx, partner.apiKey, { invoiceId: 'nope', amount: 'ten', extra: 1 }, { 'x-request-id': 'codes-400' });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual(
      badRequest(res, ['/extra', 'property extra should not exist'], ['/invoiceId', 'invoiceId must be a UUID'], ['/amount', 'amount must be of type number']),
    );
    expect(bodyOf(res).requestId).toBe('codes-400');
    const missing = await pay(ctx, partner.apiKey, {});
    expect(missing.json()).toEqual(badRequest(missing, ['/invoiceId', 'property invoiceId is required']));
  });

  it('unauthenticated (401), partner_inactive (403), not_found (404)', async () => {
    const none = await ctx.app.inject({ method: 'GET', url: '/api/v1/events' });
    expect([none.statusCode, bodyOf(none).code]).toEqual([401, 'unauthenticated']);
    const inactive = await ctx.partner({ active: false });
    const off = await ctx.api(inactive.apiKey, { method: 'GET', url: '/api/v1/events' });
    expect([off.statusCode, bodyOf(off).code]).toEqual([403, 'partner_inactive']);
    const missing = await ctx.api(key, { method: 'GET', url: '/api/v1/payments/00000000-0000-4000-8000-000000000000' });
    expect(missing.json()).toEqual(failure(missing, 404, 'Not Found', 'not_found', 'Payment not found'));
    const route = await ctx.api(key, { method: 'GET', url: '/api/v1/nowhere' });
    expect([route.statusCode, bodyOf(route).code]).toEqual([404, 'not_found']);
  });

  it('idempotency_key_in_use (409) while the first request with the key runs, idempotency_key_reuse (422) with another request', async () => {
    const { partner, invoice } = await partnerWithInvoice(ctx, 'etax', { amount: 1000 });
    const headers = { 'x-idempotency-key': 'codes-in-use' };
    await sourceFault('etax', 'slow', 1500);
    try {
      const first = pay(ctx, partner.apiKey, { invoiceId: invoice.id }, headers);
      // The second request comes once the first holds the key (its submit is slow at the ministry).
      const claimed = () => ctx.deps.db.selectFrom('idempotency_keys').select('key').where('partner_id', '=', partner.id).where('key', '=', 'codes-in-use').executeTakeFirst();
      while (!(await claimed())) await new Promise((resolve) => setTimeout(resolve, 10));
      const second = await pay(ctx, partner.apiKey, { invoiceId: invoice.id }, headers);
      expect(second.json()).toEqual(failure(second, 409, 'Conflict', 'idempotency_key_in_use', 'A request with this idempotency key is still in progress'));
      expect((await first).statusCode).toBe(201);
    } finally {
      await sourceFault('etax', 'none');
    }
    const reuse = await pay(ctx, partner.apiKey, { invoiceId: invoice.id, amount: 10 }, headers);
    expect(reuse.json()).toEqual(failure(reuse, 422, 'Unprocessable Entity', 'idempotency_key_reuse', 'Idempotency key was already used with a different request'));
  });

  it('illegal_transition (409): canceling a failed payment', async () => {
    const { partner, invoice } = await partnerWithInvoice(ctx, 'etax', { rejectPayment: true });
    const refused = await pay(ctx, partner.apiKey, { invoiceId: invoice.id });
    expect(refused.statusCode).toBe(422);
    const [failed] = await ctx.deps.db.selectFrom('payments').select('id').where('invoice_id', '=', invoice.id).execute();
    const res = await cancelPayment(ctx, partner.apiKey, failed?.id ?? '');
    expect(res.json()).toEqual(failure(res, 409, 'Conflict', 'illegal_transition', 'Payment cannot be canceled in status failed'));
  });

  it('invoice_not_payable (422): another payment in progress, or the invoice paid', async () => {
    const { partner, invoice } = await partnerWithInvoice(ctx, 'mof');
    const first = await payOk(ctx, partner.apiKey, { invoiceId: invoice.id });
    const held = await pay(ctx, partner.apiKey, { invoiceId: invoice.id });
    expect(held.statusCode).toBe(422);
    expect(held.json()).toEqual({ success: false, refNum: invoice.refNum, message: 'Another payment for this invoice is in progress', code: 'invoice_not_payable', requestId: requestIdOf(held) });
    await approveAndConfirm(ctx, invoice.refNum);
    const paid = await pay(ctx, partner.apiKey, { invoiceId: invoice.id });
    expect(paid.json()).toEqual({ success: false, refNum: invoice.refNum, message: 'Invoice is already paid', code: 'invoice_not_payable', requestId: requestIdOf(paid) });
    expect(first.id).toBeTruthy();
  });

  it('amount_not_accepted (422): over the balance here, or an amount the ministry does not take', async () => {
    const { partner, invoice } = await partnerWithInvoice(ctx, 'etax', { amount: 1000 });
    const over = await pay(ctx, partner.apiKey, { invoiceId: invoice.id, amount: 1000.01 });
    expect(over.json()).toEqual({ success: false, refNum: invoice.refNum, message: 'Amount does not match the invoice balance', code: 'amount_not_accepted', requestId: requestIdOf(over) });
    const part = await pay(ctx, partner.apiKey, { invoiceId: invoice.id, amount: 0.01 });
    expect(part.json()).toEqual({ success: false, refNum: invoice.refNum, message: 'amount does not match the invoice balance', code: 'amount_not_accepted', requestId: requestIdOf(part) });
  });

  it('ministry_rejected (422), and its replay under the key carries the same code with its own request id', async () => {
    const { partner, invoice } = await partnerWithInvoice(ctx, 'etax', { rejectPayment: true });
    const headers = { 'x-idempotency-key': 'codes-rejected' };
    const res = await pay(ctx, partner.apiKey, { invoiceId: invoice.id }, headers);
    expect(res.json()).toEqual({ success: false, refNum: invoice.refNum, message: 'not accepted at this time', code: 'ministry_rejected', requestId: requestIdOf(res) });
    const replay = await pay(ctx, partner.apiKey, { invoiceId: invoice.id }, { ...headers, 'x-request-id': 'codes-replay' });
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(replay.json()).toEqual({ success: false, refNum: invoice.refNum, message: 'not accepted at this time', code: 'ministry_rejected', requestId: 'codes-replay' });
  });

  it('rate_limited (429)', async () => {
    const p = await ctx.partner();
    const limits = await ctx.admin.inject({
      method: 'PATCH',
      url: `/admin/partners/${p.id}`,
      payload: { rateLimits: { perSecond: 1, perMinute: 1, perHour: 1 } },
      headers: { authorization: `Bearer ${ctx.config.adminToken}` },
    });
    expect(limits.statusCode, limits.body).toBe(200);
    await ctx.api(p.apiKey, { method: 'GET', url: '/api/v1/events' });
    const res = await ctx.api(p.apiKey, { method: 'GET', url: '/api/v1/events' });
    expect(res.json()).toEqual(failure(res, 429, 'Too Many Requests', 'rate_limited', 'Too Many Requests'));
  });

  it('ministry_unavailable (503): the ministry system is unreachable', async () => {
    const { partner, invoice } = await partnerWithInvoice(ctx, 'police');
    await sourceFault('police', 'error');
    try {
      const res = await pay(ctx, partner.apiKey, { invoiceId: invoice.id });
      expect(res.json()).toEqual(failure(res, 503, 'Service Unavailable', 'ministry_unavailable', 'Service temporarily unavailable, please retry later'));
    } finally {
      await sourceFault('police', 'none');
    }
  });

  it('service_unavailable (503): the database is away', async () => {
    const p = await ctx.partner();
    const away = Object.assign(new Error('Connection terminated unexpectedly'), { code: '08006' });
    const spy = vi.spyOn(ctx.deps.services.devices, 'register').mockRejectedValueOnce(away);
    try {
      const res = await ctx.api(p.apiKey, { method: 'POST', url: '/api/v1/devices', payload: { userId: 'u', fcmToken: 't', platform: 'ios' } });
      expect(res.headers['retry-after']).toBe('5');
      expect(res.json()).toEqual(failure(res, 503, 'Service Unavailable', 'service_unavailable', 'Service temporarily unavailable; retry later'));
    } finally {
      spy.mockRestore();
    }
  });
});
