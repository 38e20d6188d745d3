import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestContext, type TestContext } from '../helpers/test-context.js';

let ctx: TestContext;
let key: string;
beforeAll(async () => {
  ctx = await createTestContext();
  key = (await ctx.partner()).apiKey;
});
afterAll(() => ctx.close());

async function invoiceId(ref: string, apiKey = key): Promise<string> {
  const res = await ctx.api(apiKey, { method: 'GET', url: `/api/v1/invoices/ref/${ref}` });
  expect(res.statusCode).toBe(200);
  return res.json<{ id: string }>().id;
}

async function pay(ref: string, apiKey = key): Promise<string> {
  const res = await ctx.api(apiKey, { method: 'POST', url: '/api/v1/payments', payload: { invoiceId: await invoiceId(ref, apiKey) } });
  expect(res.statusCode).toBe(201);
  return res.json<{ id: string }>().id;
}

const approve = (payload: object, apiKey = key) => ctx.api(apiKey, { method: 'POST', url: '/api/v1/sandbox/approve', payload });
const status = async (id: string) => (await ctx.api(key, { method: 'GET', url: `/api/v1/payments/${id}` })).json<{ status: string; paidAt?: string }>();

describe('sandbox page', () => {
  it('is served without a key, self-contained', async () => {
    const res = await ctx.app.inject({ method: 'GET', url: '/api/v1/sandbox' });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(res.body).toContain('<title>Sandbox');
    // No external scripts, styles or fonts: the page works offline.
    expect(res.body).not.toMatch(/<(script|link|img)[^>]+(src|href)="(https?:)?\/\//i);
    expect(res.body).not.toMatch(/@import|url\(\s*['"]?https?:/i);
  });

  it('is not part of the OpenAPI document, the approve helper is (as sandbox-only)', async () => {
    const doc = (await ctx.app.inject({ method: 'GET', url: '/api/v1/openapi.json' })).json<{ paths: Record<string, Record<string, { tags?: string[] }>> }>();
    expect(doc.paths['/api/v1/sandbox']).toBeUndefined();
    expect(doc.paths['/api/v1/sandbox/approve']?.post?.tags).toEqual(['Sandbox']);
  });
});

describe('POST /sandbox/approve', () => {
  it('approves the partner\'s own submitted payment in the simulator', async () => {
    const id = await pay('MOF-T-1');
    const res = await approve({ paymentId: id });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ id, approved: true });
    const after = await status(id);
    expect(after.status).toBe('confirmed');
    expect(after.paidAt).toBeDefined();

    const again = await approve({ paymentId: id });
    expect(again.statusCode).toBe(409);
    expect(again.json()).toMatchObject({ statusCode: 409, error: 'Conflict' });
  });

  it('finds the invoice in whichever ministry system holds it', async () => {
    const id = await pay('ET-T-1');
    expect((await approve({ paymentId: id })).statusCode).toBe(200);
    expect((await status(id)).status).toBe('confirmed');
  });

  it('answers 409 when the simulator has nothing left to approve', async () => {
    const id = await pay('P-T-1');
    expect((await ctx.sim('/__control/approve', { refNum: 'P-T-1' })).statusCode).toBe(200);
    const res = await approve({ paymentId: id });
    expect(res.statusCode).toBe(409);
    expect(res.body).not.toContain('P-T-1');
  });

  it('needs a key and only reaches the partner\'s own payments', async () => {
    const other = await ctx.partner();
    const id = await pay('MOF-T-OVERDUE', other.apiKey);
    expect((await ctx.app.inject({ method: 'POST', url: '/api/v1/sandbox/approve', payload: { paymentId: id } })).statusCode).toBe(401);
    const res = await approve({ paymentId: id });
    expect(res.statusCode).toBe(404);
    expect(res.json()).toEqual({ statusCode: 404, message: 'Payment not found', error: 'Not Found' });
    expect((await approve({ paymentId: id }, other.apiKey)).statusCode).toBe(200);
  });

  it('validates the body', async () => {
    expect((await approve({ paymentId: 'nope' })).statusCode).toBe(400);
    expect((await approve({})).statusCode).toBe(400);
    const extra = await approve({ paymentId: '00000000-0000-4000-8000-000000000000', refNum: 'MOF-T-1' });
    expect(extra.statusCode).toBe(400);
  });
});

describe('in production', () => {
  let prod: TestContext;
  beforeAll(async () => {
    prod = await createTestContext({ config: { appEnv: 'production' } });
  });
  afterAll(() => prod.close());

  it('neither the page nor the approve helper exist', async () => {
    expect(prod.deps.services.sandbox).toBeUndefined();
    expect((await prod.app.inject({ method: 'GET', url: '/api/v1/sandbox' })).statusCode).toBe(404);
    const res = await prod.app.inject({ method: 'POST', url: '/api/v1/sandbox/approve', payload: { paymentId: '00000000-0000-4000-8000-000000000000' } });
    expect(res.statusCode).toBe(404);
  });
});
