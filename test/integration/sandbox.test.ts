import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { createTestContext, type TestContext } from '../helpers/test-context.js';
import { getPayment, partnerWithPayment, type Payment } from '../helpers/api.js';

let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext();
});
afterAll(() => ctx.close());

const approve = (apiKey: string, payload: object) => ctx.api(apiKey, { method: 'POST', url: '/api/v1/sandbox/approve', payload });
const status = async (apiKey: string, id: string) => (await getPayment(ctx, apiKey, id)).json<Payment>();

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
    expect(doc.paths['/sandbox']).toBeUndefined();
    expect(doc.paths['/sandbox/approve']?.post?.tags).toEqual(['Sandbox']);
  });
});

describe('POST /sandbox/approve', () => {
  it('approves the partner\'s own submitted payment in the simulator', async () => {
    const { partner, payment } = await partnerWithPayment(ctx, 'mof');
    const id = payment.id;
    const res = await approve(partner.apiKey, { paymentId: id });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ id, approved: true });
    const after = await status(partner.apiKey, id);
    expect(after.status).toBe('confirmed');
    expect(after.paidAt).toBeDefined();

    const again = await approve(partner.apiKey, { paymentId: id });
    expect(again.statusCode).toBe(409);
    expect(again.json()).toMatchObject({ statusCode: 409, error: 'Conflict' });
  });

  it.each(['mof', 'etax', 'police'] as const)('finds the invoice in whichever ministry system holds it (%s)', async (source) => {
    const { partner, payment } = await partnerWithPayment(ctx, source);
    expect((await approve(partner.apiKey, { paymentId: payment.id })).statusCode).toBe(200);
    expect((await status(partner.apiKey, payment.id)).status).toBe('confirmed');
  });

  it('answers 409 when the simulator has nothing left to approve', async () => {
    const { partner, invoice, payment } = await partnerWithPayment(ctx, 'police');
    expect((await ctx.sim('/__control/approve', { refNum: invoice.refNum })).statusCode).toBe(200);
    const res = await approve(partner.apiKey, { paymentId: payment.id });
    expect(res.statusCode).toBe(409);
    expect(res.body).not.toContain(invoice.refNum);
  });

  describe('with a status check under way, whose answer ("not yet") was given before the approval', () => {
    const LATE_MS = 400;
    const lateStatus = (mode: 'late' | 'none') => ctx.sim('/__control/faults', { source: 'mof', operation: 'status', mode, delayMs: LATE_MS });
    const statusInFlight = async () => (await ctx.simulator.inject({ method: 'GET', url: '/__control/calls?source=mof&operation=status' })).json<{ inFlight: number }>().inFlight;
    const storedStatus = async (id: string) => (await ctx.deps.db.selectFrom('payments').select('status').where('id', '=', id).executeTakeFirstOrThrow()).status;
    /** Approves once the ministry has answered the check and the answer is on its way back. */
    async function approveDuringCheck(apiKey: string, id: string): Promise<void> {
      await vi.waitFor(async () => expect(await statusInFlight()).toBe(1), { timeout: 2000, interval: 10 });
      expect((await approve(apiKey, { paymentId: id })).statusCode).toBe(200);
    }
    beforeEach(async () => {
      expect((await lateStatus('late')).statusCode).toBe(200);
    });
    afterEach(async () => {
      await lateStatus('none');
    });

    it('a partner\'s read\'s: its late answer is not what the next read gives', async () => {
      const { partner, payment } = await partnerWithPayment(ctx, 'mof');
      const reading = status(partner.apiKey, payment.id);
      await approveDuringCheck(partner.apiKey, payment.id);
      expect((await reading).status).toBe('submitted');
      await lateStatus('none');
      expect((await status(partner.apiKey, payment.id)).status).toBe('confirmed');
    });

    it('the confirmation job\'s: its late answer is not what the next read gives', async () => {
      const { partner, payment } = await partnerWithPayment(ctx, 'mof');
      ctx.advance(10 * 60_000);
      const running = ctx.runJobs();
      await approveDuringCheck(partner.apiKey, payment.id);
      await running;
      expect(await storedStatus(payment.id)).toBe('submitted');
      await lateStatus('none');
      expect((await status(partner.apiKey, payment.id)).status).toBe('confirmed');
    });
  });

  it('needs a key and only reaches the partner\'s own payments', async () => {
    const { partner: owner, payment } = await partnerWithPayment(ctx, 'mof');
    const stranger = await ctx.partner();
    const id = payment.id;
    expect((await ctx.app.inject({ method: 'POST', url: '/api/v1/sandbox/approve', payload: { paymentId: id } })).statusCode).toBe(401);
    const res = await approve(stranger.apiKey, { paymentId: id });
    expect(res.statusCode).toBe(404);
    expect(res.json()).toEqual({ statusCode: 404, message: 'Payment not found', error: 'Not Found', code: 'not_found', requestId: res.headers['x-request-id'] });
    expect((await status(owner.apiKey, id)).status).toBe('submitted');
    expect((await approve(owner.apiKey, { paymentId: id })).statusCode).toBe(200);
  });

  it('validates the body', async () => {
    const { apiKey } = await ctx.partner();
    expect((await approve(apiKey, { paymentId: 'nope' })).statusCode).toBe(400);
    expect((await approve(apiKey, {})).statusCode).toBe(400);
    const extra = await approve(apiKey, { paymentId: '00000000-0000-4000-8000-000000000000', refNum: 'MOF-T-1' });
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
