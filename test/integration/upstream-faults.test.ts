import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestContext, type TestContext } from '../helpers/test-context.js';
import { REG } from '../helpers/fixtures.js';
import { partnerWithInvoice, pay } from '../helpers/api.js';

let ctx: TestContext;
let key: string;

beforeAll(async () => {
  ctx = await createTestContext({ config: { circuitBreaker: { failureThreshold: 2, openMs: 30_000 } } });
  key = (await ctx.partner()).apiKey;
});
afterAll(() => ctx.close());

const fault = (source: string, mode: string, delayMs?: number) => ctx.sim('/__control/faults', { source, mode, delayMs });
const search = () => ctx.api(key, { method: 'GET', url: `/api/v1/invoices?ttd=${REG}` });
const GENERIC = { statusCode: 503, message: 'Service temporarily unavailable, please retry later', error: 'Service Unavailable', code: 'ministry_unavailable' };

async function upstreamCalls(source: string, operation: string, outcome: string): Promise<number> {
  const text = await ctx.deps.metrics.registry.getSingleMetricAsString('ministry_call_duration_seconds');
  const line = text.split('\n').find((l) => l.startsWith(`ministry_call_duration_seconds_count{source="${source}",operation="${operation}",outcome="${outcome}"}`));
  return line ? Number(line.split(' ').pop()) : 0;
}

describe('upstream faults', () => {
  it('treats a malformed upstream body as a failure of that source only', async () => {
    const healthy = (await search()).json<{ invoices: unknown[] }>().invoices.length;
    await fault('mof', 'malformed');
    try {
      const res = await search();
      expect(res.statusCode).toBe(200);
      expect(res.json<{ invoices: unknown[] }>().invoices).toHaveLength(healthy);
      const ref = await ctx.api(key, { method: 'GET', url: '/api/v1/invoices/ref/MOF-T-1' });
      expect(ref.statusCode).toBe(503);
      expect(ref.json()).toEqual({ ...GENERIC, requestId: ref.headers['x-request-id'] });
    } finally {
      await fault('mof', 'none');
    }
  });

  it('still answers when a source is slow but within the timeout', async () => {
    await fault('police', 'slow', 200);
    try {
      const res = await ctx.api(key, { method: 'GET', url: '/api/v1/invoices/ref/P-T-1' });
      expect(res.statusCode).toBe(200);
    } finally {
      await fault('police', 'none');
    }
  });

  it('leaves nothing half-written when the payment submit gets a malformed answer', async () => {
    const { partner, invoice } = await partnerWithInvoice(ctx, 'etax');
    await fault('etax', 'malformed');
    try {
      const res = await pay(ctx, partner.apiKey, { invoiceId: invoice.id });
      expect(res.statusCode).toBe(503);
      expect(res.json()).toEqual({ ...GENERIC, requestId: res.headers['x-request-id'] });
      const rows = await ctx.deps.db.selectFrom('payments').select('status').where('invoice_id', '=', invoice.id).execute();
      expect(rows.map((r) => r.status)).toEqual(['pending']);
      const events = await ctx.deps.db.selectFrom('events').select('id').where('partner_id', '=', partner.id).execute();
      expect(events).toHaveLength(0);
    } finally {
      await fault('etax', 'none');
    }
  });

  it('opens the circuit after repeated failures, skips the source, and closes it after the open period', async () => {
    await search();
    const errorsBefore = await upstreamCalls('etax', 'search', 'error');
    await fault('etax', 'error');
    await search();
    await search();
    expect(await upstreamCalls('etax', 'search', 'error')).toBe(errorsBefore + 2);
    await fault('etax', 'none');
    const whileOpen = await search();
    expect(whileOpen.statusCode).toBe(200);
    expect(await upstreamCalls('etax', 'search', 'error')).toBe(errorsBefore + 2);
    const okBefore = await upstreamCalls('etax', 'search', 'ok');
    ctx.advance(31_000);
    expect((await search()).statusCode).toBe(200);
    expect(await upstreamCalls('etax', 'search', 'ok')).toBe(okBefore + 1);
  });
});
