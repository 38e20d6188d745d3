import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifyWebhook } from '../../sdk/src/webhook-node.js';
import { createTestContext, type TestContext } from '../helpers/test-context.js';
import { receiverPool } from '../helpers/webhook-receiver.js';
import type { DeliveryAttempt } from '../helpers/api.js';

const SECRET = 'whsec_tools_0123456789abcdef';
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const UNKNOWN = '00000000-0000-4000-8000-000000000000';

interface Message {
  event: string;
  deliveryId: string;
  createdAt: string;
  data: Record<string, unknown>;
}

const testUrl = (webhookId: string) => `/api/v1/webhooks/${webhookId}/test`;
const redeliverUrl = (webhookId: string, deliveryId: string) => `/api/v1/webhooks/${webhookId}/deliveries/${deliveryId}/redeliver`;

async function registerOk(ctx: TestContext, apiKey: string, url: string, events = ['payment.submitted']): Promise<string> {
  const res = await ctx.api(apiKey, { method: 'POST', url: '/api/v1/webhooks', payload: { url, secret: SECRET, events } });
  expect(res.statusCode).toBe(201);
  return res.json<{ id: string }>().id;
}

async function attempts(ctx: TestContext, apiKey: string, webhookId: string): Promise<DeliveryAttempt[]> {
  const res = await ctx.api(apiKey, { method: 'GET', url: `/api/v1/webhooks/${webhookId}/deliveries` });
  expect(res.statusCode).toBe(200);
  return res.json<{ items: DeliveryAttempt[] }>().items;
}

async function sendTest(ctx: TestContext, apiKey: string, webhookId: string): Promise<string> {
  const res = await ctx.api(apiKey, { method: 'POST', url: testUrl(webhookId) });
  expect(res.statusCode).toBe(202);
  const body = res.json<{ deliveryId: string; event: string }>();
  expect(body).toEqual({ deliveryId: expect.stringMatching(UUID), event: 'webhook.test' });
  return body.deliveryId;
}

describe('webhook test deliveries and redelivery', () => {
  let ctx: TestContext;
  const receivers = receiverPool();
  const receiver = receivers.start;
  beforeAll(async () => {
    // One attempt per delivery: a failure is final, so only a redelivery sends it again.
    ctx = await createTestContext({ config: { webhookRetryScheduleMs: [0] } });
  });
  afterAll(async () => {
    await ctx.close();
    await receivers.closeAll();
  });

  it('sends a signed webhook.test delivery to that webhook only and logs it', async () => {
    const partner = await ctx.partner();
    const target = await receiver();
    const sibling = await receiver();
    const webhookId = await registerOk(ctx, partner.apiKey, target.url, ['payment.confirmed']);
    const siblingId = await registerOk(ctx, partner.apiKey, sibling.url, ['payment.submitted', 'payment.confirmed']);

    const deliveryId = await sendTest(ctx, partner.apiKey, webhookId);
    // The route nudges the delivery job: it goes out without waiting for the next poll.
    await expect.poll(() => target.received.length).toBe(1);
    await ctx.runJobs();

    expect(target.received).toHaveLength(1);
    expect(sibling.received).toHaveLength(0);
    const [req] = target.received;
    if (!req) throw new Error('nothing received');
    expect(req.method).toBe('POST');
    expect(req.headers['content-type']).toBe('application/json');
    expect(req.headers['x-service-event']).toBe('webhook.test');
    expect(req.headers['x-service-delivery']).toBe(deliveryId);
    expect(req.headers['x-service-timestamp']).toMatch(/^\d{10}$/);
    const signature = req.headers['x-service-signature'];
    expect(verifyWebhook(req.body, typeof signature === 'string' ? signature : undefined, SECRET)).toBe(true);
    expect(verifyWebhook(req.body, typeof signature === 'string' ? signature : undefined, 'another-secret-0123456')).toBe(false);
    const body = JSON.parse(req.body) as Message;
    expect(Object.keys(body).sort()).toEqual(['createdAt', 'data', 'deliveryId', 'event', 'eventId']);
    expect(body).toMatchObject({ event: 'webhook.test', deliveryId, data: { webhookId, message: 'test delivery' } });
    expect(Number.isNaN(Date.parse(String(body.data.sentAt)))).toBe(false);

    const log = await attempts(ctx, partner.apiKey, webhookId);
    expect(log.map((l) => [l.event, l.deliveryId, l.status, l.statusCode, l.attempt, l.nextRetryAt])).toEqual([
      ['webhook.test', deliveryId, 'succeeded', 200, 1, null],
    ]);
    expect(await attempts(ctx, partner.apiKey, siblingId)).toEqual([]);

    // Through the outbox: one event of the partner and one delivery, for this webhook only.
    const events = await ctx.deps.db.selectFrom('events').select(['event', 'payload']).where('partner_id', '=', partner.id).execute();
    expect(events).toEqual([{ event: 'webhook.test', payload: { webhookId, message: 'test delivery', sentAt: body.data.sentAt } }]);
    const rows = await ctx.deps.db
      .selectFrom('webhook_deliveries')
      .select(['id', 'webhook_id', 'status', 'attempts'])
      .where('webhook_id', 'in', [webhookId, siblingId])
      .execute();
    expect(rows).toEqual([{ id: deliveryId, webhook_id: webhookId, status: 'delivered', attempts: 1 }]);
  });

  it('keeps webhook.test out of the events a webhook can subscribe to', async () => {
    const { apiKey } = await ctx.partner();
    for (const events of [['webhook.test'], ['payment.submitted', 'webhook.test']]) {
      const res = await ctx.api(apiKey, { method: 'POST', url: '/api/v1/webhooks', payload: { url: 'https://hooks.example.com/x', secret: SECRET, events } });
      expect(res.statusCode).toBe(400);
    }
  });

  it('redelivers a failed delivery: sent again, attempt 2 in the log', async () => {
    const { apiKey } = await ctx.partner();
    const flaky = await receiver(['fail']);
    const webhookId = await registerOk(ctx, apiKey, flaky.url);
    const deliveryId = await sendTest(ctx, apiKey, webhookId);

    await ctx.runJobs();
    await ctx.runJobs();
    expect(flaky.received).toHaveLength(1);
    expect((await attempts(ctx, apiKey, webhookId)).map((l) => [l.attempt, l.status, l.statusCode, l.nextRetryAt])).toEqual([[1, 'failed', 500, null]]);
    const failed = await ctx.deps.db.selectFrom('webhook_deliveries').select('status').where('id', '=', deliveryId).executeTakeFirstOrThrow();
    expect(failed.status).toBe('failed');

    const res = await ctx.api(apiKey, { method: 'POST', url: redeliverUrl(webhookId, deliveryId) });
    expect(res.statusCode).toBe(202);
    expect(res.json()).toEqual({ deliveryId, status: 'pending' });
    await ctx.runJobs();

    expect(flaky.received).toHaveLength(2);
    // The same delivery: same id and byte-identical body, signed again.
    expect(flaky.received[1]?.body).toBe(flaky.received[0]?.body);
    expect(flaky.received[1]?.headers['x-service-delivery']).toBe(deliveryId);
    const signature = flaky.received[1]?.headers['x-service-signature'];
    expect(verifyWebhook(flaky.received[1]?.body ?? '', typeof signature === 'string' ? signature : undefined, SECRET)).toBe(true);
    expect((await attempts(ctx, apiKey, webhookId)).map((l) => [l.deliveryId, l.attempt, l.status, l.statusCode])).toEqual([
      [deliveryId, 2, 'succeeded', 200],
      [deliveryId, 1, 'failed', 500],
    ]);
  });

  it('redelivers a delivered delivery too', async () => {
    const { apiKey } = await ctx.partner();
    const target = await receiver();
    const webhookId = await registerOk(ctx, apiKey, target.url);
    const deliveryId = await sendTest(ctx, apiKey, webhookId);
    await ctx.runJobs();
    expect(target.received).toHaveLength(1);

    expect((await ctx.api(apiKey, { method: 'POST', url: redeliverUrl(webhookId, deliveryId) })).statusCode).toBe(202);
    await ctx.runJobs();
    expect(target.received).toHaveLength(2);
    expect((await attempts(ctx, apiKey, webhookId)).map((l) => [l.attempt, l.status])).toEqual([
      [2, 'succeeded'],
      [1, 'succeeded'],
    ]);
  });

  it("answers 404 for another partner's webhook, an unknown id and another webhook's delivery", async () => {
    const owner = await ctx.partner();
    const other = await ctx.partner();
    const target = await receiver();
    const webhookId = await registerOk(ctx, owner.apiKey, target.url);
    const secondId = await registerOk(ctx, owner.apiKey, 'https://hooks.example.com/second');
    const deliveryId = await sendTest(ctx, owner.apiKey, webhookId);
    await ctx.runJobs();

    const refused = [
      [other.apiKey, testUrl(webhookId)],
      [other.apiKey, redeliverUrl(webhookId, deliveryId)],
      [owner.apiKey, testUrl(UNKNOWN)],
      [owner.apiKey, redeliverUrl(UNKNOWN, deliveryId)],
      [owner.apiKey, redeliverUrl(webhookId, UNKNOWN)],
      // The partner's own delivery, but named under its other webhook.
      [owner.apiKey, redeliverUrl(secondId, deliveryId)],
    ] as const;
    for (const [apiKey, url] of refused) {
      const res = await ctx.api(apiKey, { method: 'POST', url });
      expect(res.statusCode, url).toBe(404);
      expect(res.json()).toMatchObject({ statusCode: 404, error: 'Not Found' });
    }
    expect((await ctx.api(owner.apiKey, { method: 'POST', url: testUrl('not-a-uuid') })).statusCode).toBe(400);
    expect((await ctx.api(owner.apiKey, { method: 'POST', url: redeliverUrl(webhookId, 'not-a-uuid') })).statusCode).toBe(400);
    expect((await ctx.api('gpk_sandbox_nope', { method: 'POST', url: testUrl(webhookId) })).statusCode).toBe(401);

    // Nothing was queued or sent by the refused calls.
    await ctx.runJobs();
    expect(target.received).toHaveLength(1);
    const events = await ctx.deps.db.selectFrom('events').select('id').where('partner_id', '=', other.id).execute();
    expect(events).toEqual([]);
    expect(await attempts(ctx, owner.apiKey, webhookId)).toHaveLength(1);
  });

  it('answers 404 once the webhook is deleted', async () => {
    const { apiKey } = await ctx.partner();
    const gone = await receiver(['fail']);
    const webhookId = await registerOk(ctx, apiKey, gone.url);
    const deliveryId = await sendTest(ctx, apiKey, webhookId);
    await ctx.runJobs();
    expect(gone.received).toHaveLength(1);

    expect((await ctx.api(apiKey, { method: 'DELETE', url: `/api/v1/webhooks/${webhookId}` })).statusCode).toBe(200);
    expect((await ctx.api(apiKey, { method: 'POST', url: redeliverUrl(webhookId, deliveryId) })).statusCode).toBe(404);
    expect((await ctx.api(apiKey, { method: 'POST', url: testUrl(webhookId) })).statusCode).toBe(404);
    await ctx.runJobs();
    expect(gone.received).toHaveLength(1);
    const row = await ctx.deps.db.selectFrom('webhook_deliveries').select('status').where('id', '=', deliveryId).executeTakeFirstOrThrow();
    expect(row.status).toBe('failed');
  });

  it('documents both routes under Webhooks with every status they answer', async () => {
    const res = await ctx.app.inject({ method: 'GET', url: '/api/v1/openapi.json' });
    const doc = res.json<{ paths: Record<string, Record<string, { tags?: string[]; responses: Record<string, unknown> }>> }>();
    for (const path of ['/webhooks/{id}/test', '/webhooks/{id}/deliveries/{deliveryId}/redeliver']) {
      const op = doc.paths[path]?.post;
      expect(op?.tags).toEqual(['Webhooks']);
      expect(Object.keys(op?.responses ?? {}).sort()).toEqual(['202', '400', '401', '403', '404', '429', '500', '503']);
    }
  });
});

describe('webhook tools are rate-limited like every partner route', () => {
  let ctx: TestContext;
  const at = Date.now();
  beforeAll(async () => {
    ctx = await createTestContext({ config: { rateLimit: { perSecond: 2, perMinute: 1000, perHour: 1000 } }, rateLimitClock: () => at });
  });
  afterAll(() => ctx.close());

  it('answers 429 before queueing anything', async () => {
    const partner = await ctx.partner();
    const create = await ctx.api(partner.apiKey, {
      method: 'POST',
      url: '/api/v1/webhooks',
      payload: { url: 'https://hooks.example.com/limited', secret: SECRET, events: ['payment.submitted'] },
    });
    expect(create.statusCode).toBe(201);
    const webhookId = create.json<{ id: string }>().id;
    const first = await ctx.api(partner.apiKey, { method: 'POST', url: testUrl(webhookId) });
    expect(first.statusCode).toBe(202);
    expect(first.headers.ratelimit).toBeDefined();
    const limited = await ctx.api(partner.apiKey, { method: 'POST', url: testUrl(webhookId) });
    expect(limited.statusCode).toBe(429);
    expect(limited.headers['retry-after']).toBeDefined();
    const deliveryId = first.json<{ deliveryId: string }>().deliveryId;
    expect((await ctx.api(partner.apiKey, { method: 'POST', url: redeliverUrl(webhookId, deliveryId) })).statusCode).toBe(429);
    const events = await ctx.deps.db.selectFrom('events').select('id').where('partner_id', '=', partner.id).execute();
    expect(events).toHaveLength(1);
  });
});
