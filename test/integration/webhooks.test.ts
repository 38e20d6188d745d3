import { createHmac, randomBytes } from 'node:crypto';
import { rm } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestContext, dropSchema, type TestContext } from '../helpers/test-context.js';
import { testFixtures } from '../helpers/fixtures.js';
import { receiverPool, startReceiver } from '../helpers/webhook-receiver.js';
import { lookupRef, payOk, type DeliveryAttempt } from '../helpers/api.js';
import type { FixtureFile } from '../../simulator/fixtures.schema.js';
import type { Config } from '../../src/config/config.js';
import { testConfig } from '../helpers/test-config.js';
import { seededDataDir } from '../helpers/database-image.js';
import { createWebhookDeliveryJob } from '../../src/jobs/webhook-delivery.job.js';
import { createWebhookDeliveryRepository } from '../../src/db/repositories/webhook-delivery.repository.js';
import { createWebhookDeliveryService } from '../../src/services/webhook-delivery.service.js';
import { createWebhookHttpClient } from '../../src/adapters/webhook-http.client.js';
import { createSecretCipher } from '../../src/domain/secret-cipher.js';
import type { Job } from '../../src/work/job-runner.js';

const SECRET = 'whsec_0123456789abcdef';
// Retries a minute apart on the services' clock, which the tests move forward by hand.
const SCHEDULE = [0, 60_000, 60_000, 60_000];
const deliveryConfig: Partial<Config> = { webhookRetryScheduleMs: SCHEDULE, webhookTimeoutMs: 300 };

function fixtures(): FixtureFile {
  const base = testFixtures();
  const template = base.invoices[0];
  if (!template) throw new Error('fixtures are empty');
  const extra = Array.from({ length: 30 }, (_, i) => ({ ...template, refNum: `WH-${i}`, amount: 1000 + i, year: undefined, linkedRefNums: [] }));
  return { invoices: [...base.invoices, ...extra] };
}

interface Delivery {
  event: string;
  deliveryId: string;
  createdAt: string;
  data: Record<string, unknown>;
}

let nextRef = 0;
const freshRef = () => `WH-${nextRef++}`;

async function pay(ctx: TestContext, key: string, refNum: string): Promise<{ paymentId: string; invoiceId: string; amount: number }> {
  const invoiceId = (await lookupRef(ctx, key, refNum)).id;
  const created = await payOk(ctx, key, { invoiceId });
  return { paymentId: created.id, invoiceId, amount: created.amount };
}

async function register(ctx: TestContext, key: string, payload: object) {
  return ctx.api(key, { method: 'POST', url: '/api/v1/webhooks', payload });
}

async function registerOk(ctx: TestContext, key: string, url: string, events = ['payment.submitted', 'payment.confirmed']): Promise<string> {
  const res = await register(ctx, key, { url, secret: SECRET, events });
  expect(res.statusCode).toBe(201);
  return res.json<{ id: string }>().id;
}

async function attempts(ctx: TestContext, key: string, webhookId: string): Promise<DeliveryAttempt[]> {
  const res = await ctx.api(key, { method: 'GET', url: `/api/v1/webhooks/${webhookId}/deliveries` });
  expect(res.statusCode).toBe(200);
  return res.json<{ items: DeliveryAttempt[] }>().items;
}

/** One delivery pass after moving the clock past any retry delay. */
async function deliverPass(ctx: TestContext): Promise<void> {
  ctx.advance(61_000);
  await ctx.runJobs();
}

const hmac = (secret: string, body: string) => createHmac('sha256', secret).update(body).digest('hex');

describe('webhook registration', () => {
  let ctx: TestContext;
  beforeAll(async () => {
    ctx = await createTestContext({ config: deliveryConfig });
  });
  afterAll(() => ctx.close());

  it('returns the secret once, lists without it and stores it encrypted', async () => {
    const { apiKey } = await ctx.partner();
    const res = await register(ctx, apiKey, { url: 'https://hooks.example.com/gov', secret: SECRET, events: ['payment.confirmed'] });
    expect(res.statusCode).toBe(201);
    const created = res.json<Record<string, unknown>>();
    expect(Object.keys(created).sort()).toEqual(['createdAt', 'disabledReason', 'enabled', 'events', 'id', 'secret', 'url']);
    expect(created).toMatchObject({ url: 'https://hooks.example.com/gov', secret: SECRET, events: ['payment.confirmed'] });

    const list = await ctx.api(apiKey, { method: 'GET', url: '/api/v1/webhooks' });
    expect(list.statusCode).toBe(200);
    expect(list.json()).toEqual([{ id: created.id, url: created.url, events: ['payment.confirmed'], enabled: true, disabledReason: null, createdAt: created.createdAt }]);
    expect(list.body).not.toContain(SECRET);

    const stored = await ctx.deps.db.selectFrom('webhooks').select('secret_ciphertext').where('id', '=', created.id as string).executeTakeFirstOrThrow();
    expect(stored.secret_ciphertext).not.toContain(SECRET);
    expect(createSecretCipher(ctx.config.webhookSecretKey).decrypt(stored.secret_ciphertext)).toBe(SECRET);
  });

  it.each([
    ['a malformed url', { url: 'not a url' }],
    ['a non-http scheme', { url: 'ftp://hooks.example.com/x' }],
    ['a url with credentials', { url: 'https://user:pw@hooks.example.com/x' }],
    ['a short secret', { secret: 'x'.repeat(15) }],
    ['a long secret', { secret: 'x'.repeat(257) }],
    ['no events', { events: [] }],
    ['an unknown event', { events: ['payment.refunded'] }],
    ['a duplicate event', { events: ['payment.submitted', 'payment.submitted'] }],
    ['events that are not an array', { events: 'payment.submitted' }],
    ['an extra field', { active: true }],
    ['a missing secret', { secret: undefined }],
  ])('answers 400 for %s', async (_label, patch) => {
    const { apiKey } = await ctx.partner();
    const payload = { url: 'https://hooks.example.com/x', secret: SECRET, events: ['payment.submitted'], ...patch };
    const res = await register(ctx, apiKey, payload);
    expect(res.statusCode).toBe(400);
    const body = res.json<{ statusCode: number; message: string[]; error: string }>();
    expect(body.statusCode).toBe(400);
    expect(body.error).toBe('Bad Request');
    expect(Array.isArray(body.message) && body.message.length > 0).toBe(true);
  });

  it('accepts the secret length bounds', async () => {
    const { apiKey } = await ctx.partner();
    for (const secret of ['s'.repeat(16), 's'.repeat(256)]) {
      expect((await register(ctx, apiKey, { url: 'https://hooks.example.com/x', secret, events: ['payment.submitted'] })).statusCode).toBe(201);
    }
  });

  it("keeps partners apart and deletes only one's own webhooks", async () => {
    const a = await ctx.partner();
    const b = await ctx.partner();
    const id = await registerOk(ctx, a.apiKey, 'https://hooks.example.com/a');

    expect((await ctx.api(b.apiKey, { method: 'GET', url: '/api/v1/webhooks' })).json()).toEqual([]);
    expect((await ctx.api(b.apiKey, { method: 'GET', url: `/api/v1/webhooks/${id}/deliveries` })).statusCode).toBe(404);
    expect((await ctx.api(b.apiKey, { method: 'DELETE', url: `/api/v1/webhooks/${id}` })).statusCode).toBe(404);
    expect((await ctx.api(a.apiKey, { method: 'GET', url: '/api/v1/webhooks' })).json<unknown[]>()).toHaveLength(1);

    expect((await ctx.api(a.apiKey, { method: 'DELETE', url: '/api/v1/webhooks/not-a-uuid' })).statusCode).toBe(400);
    const del = await ctx.api(a.apiKey, { method: 'DELETE', url: `/api/v1/webhooks/${id}` });
    expect(del.statusCode).toBe(200);
    expect(del.json()).toEqual({ id, deleted: true });
    expect((await ctx.api(a.apiKey, { method: 'GET', url: '/api/v1/webhooks' })).json()).toEqual([]);
    expect((await ctx.api(a.apiKey, { method: 'DELETE', url: `/api/v1/webhooks/${id}` })).statusCode).toBe(404);
    expect((await ctx.api(a.apiKey, { method: 'GET', url: `/api/v1/webhooks/${id}/deliveries` })).statusCode).toBe(404);
  });
});

describe('webhook delivery', () => {
  let ctx: TestContext;
  const receivers = receiverPool();
  const receiver = receivers.start;
  beforeAll(async () => {
    ctx = await createTestContext({ config: deliveryConfig, fixtures: fixtures() });
  });
  afterAll(async () => {
    await ctx.close();
    await receivers.closeAll();
  });

  it('delivers both events, signed, with the documented headers, once each', async () => {
    const { apiKey } = await ctx.partner();
    const all = await receiver();
    const confirmedOnly = await receiver();
    const webhookId = await registerOk(ctx, apiKey, all.url);
    await registerOk(ctx, apiKey, confirmedOnly.url, ['payment.confirmed']);

    const refNum = freshRef();
    const { paymentId, invoiceId, amount } = await pay(ctx, apiKey, refNum);
    await ctx.runJobs();
    expect(all.received).toHaveLength(1);
    expect(confirmedOnly.received).toHaveLength(0);

    expect((await ctx.sim('/__control/approve', { refNum })).statusCode).toBe(200);
    expect((await ctx.api(apiKey, { method: 'GET', url: `/api/v1/payments/${paymentId}` })).json<{ status: string }>().status).toBe('confirmed');
    await ctx.runJobs();
    await deliverPass(ctx);
    expect(all.received).toHaveLength(2);
    expect(confirmedOnly.received).toHaveLength(1);

    const [submitted, confirmed] = all.received.map((r) => ({ req: r, body: JSON.parse(r.body) as Delivery }));
    expect(submitted?.body).toMatchObject({ event: 'payment.submitted', data: { id: paymentId, invoiceId } });
    expect(confirmed?.body).toMatchObject({ event: 'payment.confirmed', data: { id: paymentId, amount } });
    for (const { req, body } of [submitted, confirmed].filter((x) => x !== undefined)) {
      expect(Object.keys(body).sort()).toEqual(['createdAt', 'data', 'deliveryId', 'event', 'eventId']);
      expect(req.method).toBe('POST');
      expect(req.headers['content-type']).toBe('application/json');
      expect(req.headers['x-service-event']).toBe(body.event);
      expect(req.headers['x-service-delivery']).toBe(body.deliveryId);
      expect(req.headers['x-service-timestamp']).toMatch(/^\d{10}$/);
      expect(req.headers['x-service-signature']).toBe(hmac(SECRET, req.body));
      expect(Number.isNaN(Date.parse(body.createdAt))).toBe(false);
    }

    const log = await attempts(ctx, apiKey, webhookId);
    expect(log.map((l) => [l.event, l.status, l.statusCode, l.attempt, l.nextRetryAt])).toEqual([
      ['payment.confirmed', 'succeeded', 200, 1, null],
      ['payment.submitted', 'succeeded', 200, 1, null],
    ]);
  });

  it('retries a failing receiver with the same delivery, then never sends it again after a 2xx', async () => {
    const { apiKey } = await ctx.partner();
    const flaky = await receiver(['fail', 'fail', 'ok']);
    const webhookId = await registerOk(ctx, apiKey, flaky.url, ['payment.submitted']);
    await pay(ctx, apiKey, freshRef());

    await ctx.runJobs();
    // Retries wait for their scheduled time: an immediate second pass sends nothing new.
    await ctx.runJobs();
    expect(flaky.received).toHaveLength(1);
    for (let i = 0; i < 5; i++) await deliverPass(ctx);

    expect(flaky.received).toHaveLength(3);
    const bodies = new Set(flaky.received.map((r) => r.body));
    const ids = new Set(flaky.received.map((r) => r.headers['x-service-delivery']));
    expect(bodies.size).toBe(1);
    expect(ids.size).toBe(1);

    const log = await attempts(ctx, apiKey, webhookId);
    expect(log.map((l) => [l.attempt, l.status, l.statusCode, l.error])).toEqual([
      [3, 'succeeded', 200, null],
      [2, 'failed', 500, 'HTTP 500'],
      [1, 'failed', 500, 'HTTP 500'],
    ]);
    expect(log[1]?.nextRetryAt).not.toBeNull();
  });

  it('cuts a hanging receiver at the timeout and retries', async () => {
    const { apiKey } = await ctx.partner();
    const slow = await receiver(['hang', 'ok']);
    const webhookId = await registerOk(ctx, apiKey, slow.url, ['payment.submitted']);
    await pay(ctx, apiKey, freshRef());

    await ctx.runJobs();
    let log = await attempts(ctx, apiKey, webhookId);
    // The attempt made, and the retry it scheduled, pending.
    expect(log.map((l) => [l.status, l.attempt])).toEqual([
      ['pending', 2],
      ['failed', 1],
    ]);
    expect(log[1]).toMatchObject({ attempt: 1, status: 'failed', statusCode: null });
    expect(log[1]?.error).toMatch(/timeout/);
    expect(log[0]?.createdAt).toBe(log[1]?.nextRetryAt);

    await deliverPass(ctx);
    expect(slow.received).toHaveLength(2);
    log = await attempts(ctx, apiKey, webhookId);
    expect(log[0]).toMatchObject({ attempt: 2, status: 'succeeded', statusCode: 200 });
  });

  it('marks a delivery failed when the schedule is used up', async () => {
    const { apiKey } = await ctx.partner();
    const down = await receiver(Array(20).fill('fail'));
    const webhookId = await registerOk(ctx, apiKey, down.url, ['payment.submitted']);
    await pay(ctx, apiKey, freshRef());

    for (let i = 0; i < SCHEDULE.length + 3; i++) await deliverPass(ctx);
    expect(down.received).toHaveLength(SCHEDULE.length);
    const log = await attempts(ctx, apiKey, webhookId);
    expect(log[0]).toMatchObject({ attempt: SCHEDULE.length, status: 'failed', nextRetryAt: null });
    const row = await ctx.deps.db.selectFrom('webhook_deliveries').select('status').where('webhook_id', '=', webhookId).executeTakeFirstOrThrow();
    expect(row.status).toBe('failed');
  });

  it('stops delivering to a deleted webhook', async () => {
    const { apiKey } = await ctx.partner();
    const gone = await receiver();
    const webhookId = await registerOk(ctx, apiKey, gone.url, ['payment.submitted']);
    await pay(ctx, apiKey, freshRef());
    expect((await ctx.api(apiKey, { method: 'DELETE', url: `/api/v1/webhooks/${webhookId}` })).statusCode).toBe(200);
    await deliverPass(ctx);
    expect(gone.received).toHaveLength(0);
  });

  it("never shows one partner another's deliveries", async () => {
    const a = await ctx.partner();
    const b = await ctx.partner();
    const ra = await receiver();
    const rb = await receiver();
    const wa = await registerOk(ctx, a.apiKey, ra.url, ['payment.submitted']);
    const wb = await registerOk(ctx, b.apiKey, rb.url, ['payment.submitted']);
    const { paymentId } = await pay(ctx, a.apiKey, freshRef());
    await deliverPass(ctx);

    expect(ra.received).toHaveLength(1);
    expect(rb.received).toHaveLength(0);
    expect(await attempts(ctx, a.apiKey, wa)).toHaveLength(1);
    expect(await attempts(ctx, b.apiKey, wb)).toEqual([]);
    expect(JSON.parse(ra.received[0]?.body ?? '{}')).toMatchObject({ data: { id: paymentId } });
  });

  it('two worker instances deliver each event exactly once', async () => {
    const { apiKey } = await ctx.partner();
    const target = await receiver([], { delayMs: 30 });
    await registerOk(ctx, apiKey, target.url, ['payment.submitted']);
    const payments = [];
    for (let i = 0; i < 6; i++) payments.push((await pay(ctx, apiKey, freshRef())).paymentId);

    const worker = (): Job => {
      const deliveries = createWebhookDeliveryRepository(ctx.deps.db);
      const service = createWebhookDeliveryService({
        deliveries,
        cipher: createSecretCipher(ctx.config.webhookSecretKey),
        http: createWebhookHttpClient({ timeoutMs: 2000, allowPrivate: true }),
        retryScheduleMs: SCHEDULE,
        log: ctx.deps.logger,
        now: ctx.now,
      });
      const concurrency = { total: 2, perEndpoint: 2, perPartner: 2 };
      return createWebhookDeliveryJob({ deliveries, service, intervalMs: 1000, leaseMs: 32_000, concurrency, slowConcurrency: 2, log: ctx.deps.logger, now: ctx.now });
    };
    const [one, two] = [worker(), worker()];
    for (let round = 0; round < 6; round++) {
      await Promise.all([one.run(), two.run()]);
      await Promise.all([one.drain?.(), two.drain?.()]);
    }

    expect(target.received).toHaveLength(6);
    const paid = target.received.map((r) => (JSON.parse(r.body) as Delivery).data.id);
    expect(new Set(paid)).toEqual(new Set(payments));
    expect(new Set(target.received.map((r) => r.headers['x-service-delivery'])).size).toBe(6);
  });
});

describe('webhook outbox across a restart', () => {
  it('delivers an event committed before the process died', async () => {
    const receiverUp = await startReceiver();
    const usesPg = testConfig().databaseUrl !== null;
    const dataDir = usesPg ? 'memory://' : await seededDataDir('gpc-outbox-');
    const schema = usesPg ? `t_restart_${randomBytes(4).toString('hex')}` : undefined;
    const opts = { config: { ...deliveryConfig, dataDir }, fixtures: fixtures(), reuseSchema: schema };
    try {
      const first = await createTestContext(opts);
      const { apiKey } = await first.partner();
      await registerOk(first, apiKey, receiverUp.url, ['payment.submitted']);
      const { paymentId } = await pay(first, apiKey, 'WH-29');
      await first.close();
      expect(receiverUp.received).toHaveLength(0);

      const second = await createTestContext(opts);
      try {
        await second.runJobs();
        expect(receiverUp.received).toHaveLength(1);
        expect(JSON.parse(receiverUp.received[0]?.body ?? '{}')).toMatchObject({ event: 'payment.submitted', data: { id: paymentId } });
      } finally {
        await second.close();
      }
    } finally {
      await receiverUp.close();
      const url = testConfig().databaseUrl;
      if (url && schema) await dropSchema(url, schema);
      if (!usesPg) await rm(dataDir, { recursive: true, force: true });
    }
  });
});
