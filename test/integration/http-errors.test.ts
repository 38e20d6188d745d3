import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestContext, type TestContext } from '../helpers/test-context.js';
import { REG } from '../helpers/fixtures.js';

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
    const local = await createTestContext();
    await local.deps.db.destroy();
    const res = await local.app.inject({ method: 'GET', url: '/api/v1/health/ready' });
    expect(res.statusCode).toBe(503);
    expect(res.json()).toMatchObject({ status: 'unavailable', db: 'down' });
    await local.close();
  });
});
