import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { createHmac, randomBytes } from 'node:crypto';
import { Webhook as StandardWebhook } from 'standardwebhooks';
import type { Static } from 'typebox';
import { createTestContext, type TestContext } from '../helpers/test-context.js';
import { receiverPool, type ReceivedRequest } from '../helpers/webhook-receiver.js';
import { badRequest, ownInvoice, payOk, type DeliveryAttempt, type Partner } from '../helpers/api.js';
import { verifyWebhookRequest } from '../../sdk/src/webhook-node.js';
import type { RecoverQueuedBody, SecretRotatedBody, WebhookBody } from '../../src/schemas/webhook.schema.js';
import type { EventListBody } from '../../src/schemas/event.schema.js';
import { unitOfWorkRunner } from '../../src/db/unit-of-work.js';
import { createOutbox } from '../../src/db/outbox.statements.js';
import { sql } from 'kysely';

/** A delivery carries its event's created_at, as the service writes it: the two share a monthly partition. */
const eventTime = (eventId: string | undefined) => sql<Date>`(SELECT created_at FROM events WHERE id = ${eventId ?? null}::uuid)`;

type WebhookView = Static<typeof WebhookBody>;
type Rotated = Static<typeof SecretRotatedBody>;
type Recovered = Static<typeof RecoverQueuedBody>;

const SECRET = 'whsec_recovery_0123456789';
const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const UNKNOWN = '00000000-0000-4000-8000-000000000000';
/** Bounds the waits below only so a regression fails instead of hanging; nothing asserts a time. */
const ARRIVAL = { timeout: 30_000, interval: 20 };

interface Body {
  event: string;
  eventId: string;
  deliveryId: string;
  data: { id: string };
}

const bodyOf = (r: ReceivedRequest) => JSON.parse(r.body) as Body;
const flatHeaders = (r: ReceivedRequest) => Object.fromEntries(Object.entries(r.headers).map(([k, v]) => [k, String(v)]));
/** As the guide says: a secret that is not in the `whsec_` base64 form goes to the package as `whsec_` and its UTF-8 bytes in base64. */
const standard = (secret: string) => new StandardWebhook(`whsec_${Buffer.from(secret, 'utf8').toString('base64')}`);
/** A secret in the Standard Webhooks form, which the package takes as it is. */
const whsecSecret = () => `whsec_${randomBytes(32).toString('base64')}`;

async function registerOk(ctx: TestContext, partner: Partner, url: string, events = ['payment.submitted'], secret = SECRET): Promise<string> {
  const res = await ctx.api(partner.apiKey, { method: 'POST', url: '/api/v1/webhooks', payload: { url, secret, events } });
  expect(res.statusCode).toBe(201);
  return res.json<{ id: string }>().id;
}

async function payments(ctx: TestContext, partner: Partner, n: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    const invoice = await ownInvoice(ctx, partner, 'mof');
    ids.push((await payOk(ctx, partner.apiKey, { invoiceId: invoice.id })).id);
  }
  return ids;
}

async function log(ctx: TestContext, partner: Partner, webhookId: string, query = ''): Promise<{ items: DeliveryAttempt[]; nextCursor: string | null }> {
  const res = await ctx.api(partner.apiKey, { method: 'GET', url: `/api/v1/webhooks/${webhookId}/deliveries${query}` });
  expect(res.statusCode, res.body).toBe(200);
  return res.json();
}

async function recover(ctx: TestContext, partner: Partner, webhookId: string, since: Date): Promise<number> {
  const res = await ctx.api(partner.apiKey, { method: 'POST', url: `/api/v1/webhooks/${webhookId}/recover`, payload: { since: since.toISOString() } });
  expect(res.statusCode, res.body).toBe(202);
  return res.json<Recovered>().queued;
}

async function patch(ctx: TestContext, partner: Partner, webhookId: string, payload: object) {
  return ctx.api(partner.apiKey, { method: 'PATCH', url: `/api/v1/webhooks/${webhookId}`, payload });
}

async function getWebhook(ctx: TestContext, partner: Partner, webhookId: string): Promise<WebhookView> {
  const res = await ctx.api(partner.apiKey, { method: 'GET', url: `/api/v1/webhooks/${webhookId}` });
  expect(res.statusCode).toBe(200);
  return res.json<WebhookView>();
}

async function rotate(ctx: TestContext, partner: Partner, webhookId: string, payload: object = {}): Promise<Rotated> {
  const res = await ctx.api(partner.apiKey, { method: 'POST', url: `/api/v1/webhooks/${webhookId}/rotate-secret`, payload });
  expect(res.statusCode, res.body).toBe(200);
  return res.json<Rotated>();
}

describe('delivery log and recovery', () => {
  let ctx: TestContext;
  const receivers = receiverPool();
  beforeAll(async () => {
    // One attempt per delivery: a failure is final, so only recover sends it again.
    ctx = await createTestContext({ config: { webhookRetryScheduleMs: [0] } });
  });
  afterAll(async () => {
    await ctx.close();
    await receivers.closeAll();
  });

  it('logs each attempt with its event and payment, filters by status and payment, and pages', async () => {
    const partner = await ctx.partner();
    const receiver = await receivers.start(['fail', 'ok', 'fail']);
    const webhookId = await registerOk(ctx, partner, receiver.url);
    const [p1, p2, p3] = await payments(ctx, partner, 3);
    // The requests' nudges may have started the first attempts already.
    await ctx.runJobs();
    expect(receiver.received).toHaveLength(3);

    const { items, nextCursor } = await log(ctx, partner, webhookId);
    expect(nextCursor).toBeNull();
    expect(new Set(items.map((i) => i.paymentId))).toEqual(new Set([p1, p2, p3]));
    for (const item of items) {
      const sent = receiver.received.map(bodyOf).find((b) => b.deliveryId === item.deliveryId);
      expect(item.eventId).toBe(sent?.eventId);
      expect(item.paymentId).toBe(sent?.data.id);
    }
    expect((await log(ctx, partner, webhookId, '?status=failed')).items.map((i) => i.status)).toEqual(['failed', 'failed']);
    expect((await log(ctx, partner, webhookId, '?status=succeeded')).items).toHaveLength(1);
    expect((await log(ctx, partner, webhookId, '?status=pending')).items).toEqual([]);
    expect((await log(ctx, partner, webhookId, `?paymentId=${p2}`)).items.map((i) => i.paymentId)).toEqual([p2]);

    const first = await log(ctx, partner, webhookId, '?limit=2');
    expect(first.items).toEqual(items.slice(0, 2));
    const second = await log(ctx, partner, webhookId, `?limit=2&cursor=${first.nextCursor}`);
    expect(second.items).toEqual(items.slice(2));
    expect(second.nextCursor).toBeNull();

    for (const bad of ['?status=delivered', '?paymentId=x', '?cursor=AAAA', `?cursor=${UNKNOWN}`, '?limit=0']) {
      expect((await ctx.api(partner.apiKey, { method: 'GET', url: `/api/v1/webhooks/${webhookId}/deliveries${bad}` })).statusCode, bad).toBe(400);
    }
  });

  it("refuses a cursor of the partner's other webhook, another partner's or a made-up one, as GET /events does, and pages on with its own", async () => {
    const partner = await ctx.partner();
    const other = await ctx.partner();
    const receiver = await receivers.start();
    const mine = await registerOk(ctx, partner, receiver.url);
    const sibling = await registerOk(ctx, partner, receiver.url);
    const theirs = await registerOk(ctx, other, receiver.url);
    const sends: [Partner, string][] = [[partner, mine], [partner, mine], [partner, mine], [partner, sibling], [partner, sibling], [other, theirs], [other, theirs]];
    for (const [owner, webhookId] of sends) {
      expect((await ctx.api(owner.apiKey, { method: 'POST', url: `/api/v1/webhooks/${webhookId}/test` })).statusCode).toBe(202);
    }
    // Every test delivery made: the logs no longer change under the pages read below.
    await expect.poll(() => receiver.received.length, ARRIVAL).toBe(sends.length);
    await ctx.runJobs();

    const all = await log(ctx, partner, mine);
    expect(all.items).toHaveLength(3);
    const first = await log(ctx, partner, mine, '?limit=2');
    expect(first.items).toEqual(all.items.slice(0, 2));
    const second = await log(ctx, partner, mine, `?limit=2&cursor=${first.nextCursor}`);
    expect(second.items).toEqual(all.items.slice(2));
    expect(second.nextCursor).toBeNull();

    const siblingCursor = (await log(ctx, partner, sibling, '?limit=1')).nextCursor;
    const theirCursor = (await log(ctx, other, theirs, '?limit=1')).nextCursor;
    expect(siblingCursor).toEqual(expect.any(String));
    expect(theirCursor).toEqual(expect.any(String));
    const b64 = (text: string) => Buffer.from(text).toString('base64url');
    const [ms, attempt, itemId] = Buffer.from(first.nextCursor as string, 'base64url').toString('utf8').split(':').at(-1)?.split('.') ?? [];
    const refused = [
      siblingCursor as string, // the partner's other webhook
      theirCursor as string, // another partner's webhook
      b64(`d1:${other.id}:${mine}:${ms}.${attempt}.${itemId}`), // this webhook, named with another partner
      b64(`d9:${partner.id}:${mine}:${ms}.${attempt}.${itemId}`), // an unknown version
      b64(`d1:${partner.id}:${mine}:${ms}.${attempt}`),
      b64(`d1:${partner.id}:${mine}:${ms}.${attempt}.${itemId}.1`),
      UNKNOWN, // the shape of a row id
      'AAAA',
    ];
    for (const cursor of refused) {
      const res = await ctx.api(partner.apiKey, { method: 'GET', url: `/api/v1/webhooks/${mine}/deliveries?cursor=${cursor}` });
      expect(res.statusCode, cursor).toBe(400);
      expect(res.json()).toEqual(badRequest(res, ['/cursor', 'cursor must be the nextCursor of a previous page']));
    }
    // The sort key the old, unbound cursors were: malformed now, refused by the query schema in the same words.
    const old = await ctx.api(partner.apiKey, { method: 'GET', url: `/api/v1/webhooks/${mine}/deliveries?cursor=${ms}.${attempt}.${itemId}` });
    expect(old.statusCode).toBe(400);
    expect(old.json()).toMatchObject({ statusCode: 400, error: 'Bad Request' });
    // Its own cursor, made the same way, is taken.
    expect((await log(ctx, partner, mine, `?cursor=${b64(`d1:${partner.id}:${mine}:${ms}.${attempt}.${itemId}`)}`)).items).toEqual(all.items.slice(2));
  });

  it('recovers after the receiver was down: every missed event arrives once more, nothing twice', async () => {
    const partner = await ctx.partner();
    const since = new Date(Date.now() - 60_000);
    const receiver = await receivers.start(['fail', 'fail', 'fail']);
    const webhookId = await registerOk(ctx, partner, receiver.url);
    const paid = await payments(ctx, partner, 4);
    await ctx.runJobs();
    // Three attempts failed (the receiver was down), the fourth got through.
    expect(receiver.received).toHaveLength(4);
    const missed = receiver.received.slice(0, 3).map(bodyOf);

    expect(await recover(ctx, partner, webhookId, since)).toBe(3);
    // Asked again while they are pending: nothing more is queued.
    expect(await recover(ctx, partner, webhookId, since)).toBe(0);
    await ctx.runJobs();
    await ctx.runJobs();

    const again = receiver.received.slice(4).map(bodyOf);
    expect(again.map((b) => b.eventId).sort()).toEqual(missed.map((m) => m.eventId).sort());
    // The same delivery and event ids as the missed attempts: a receiver deduplicates by them.
    expect(again.map((b) => b.deliveryId).sort()).toEqual(missed.map((m) => m.deliveryId).sort());
    const perPayment = receiver.received.map(bodyOf).reduce((n, b) => n.set(b.data.id, (n.get(b.data.id) ?? 0) + 1), new Map<string, number>());
    expect([...perPayment.values()].sort()).toEqual([1, 2, 2, 2]);
    expect(new Set(perPayment.keys())).toEqual(new Set(paid));
    // The log shows each as its delivery's second attempt, succeeded.
    const secondAttempts = (await log(ctx, partner, webhookId, '?status=succeeded')).items.filter((i) => i.attempt === 2);
    expect(secondAttempts.map((i) => i.eventId).sort()).toEqual(missed.map((m) => m.eventId).sort());

    // Everything is delivered: a later recover queues nothing.
    expect(await recover(ctx, partner, webhookId, since)).toBe(0);
    await ctx.runJobs();
    expect(receiver.received).toHaveLength(7);
  });

  it('recovers the events that happened while the webhook was disabled', async () => {
    const partner = await ctx.partner();
    const receiver = await receivers.start();
    const webhookId = await registerOk(ctx, partner, receiver.url);
    const [before] = await payments(ctx, partner, 1);
    await ctx.runJobs();
    expect(receiver.received).toHaveLength(1);

    expect((await patch(ctx, partner, webhookId, { enabled: false })).json()).toMatchObject({ enabled: false, disabledReason: 'manual' });
    const since = new Date(Date.now() - 1000);
    const during = await payments(ctx, partner, 2);
    await ctx.runJobs();
    expect(receiver.received).toHaveLength(1);
    // The events are there to be read, though nothing was sent.
    const events = await ctx.api(partner.apiKey, { method: 'GET', url: '/api/v1/events' });
    expect(events.json<Static<typeof EventListBody>>().items.map((e) => e.data.id).sort()).toEqual([before, ...during].sort());

    expect((await patch(ctx, partner, webhookId, { enabled: true })).json()).toMatchObject({ enabled: true, disabledReason: null });
    await ctx.runJobs();
    expect(receiver.received).toHaveLength(1);
    expect(await recover(ctx, partner, webhookId, since)).toBe(2);
    await ctx.runJobs();
    expect(receiver.received.slice(1).map((r) => bodyOf(r).data.id).sort()).toEqual([...during].sort());
  });

  it("answers 404 for another partner's webhook on every route, and 400 for a malformed since", async () => {
    const owner = await ctx.partner();
    const other = await ctx.partner();
    const webhookId = await registerOk(ctx, owner, (await receivers.start()).url);
    const routes = [
      { method: 'GET' as const, url: `/api/v1/webhooks/${webhookId}` },
      { method: 'PATCH' as const, url: `/api/v1/webhooks/${webhookId}`, payload: { enabled: false } },
      { method: 'PATCH' as const, url: `/api/v1/webhooks/${webhookId}`, payload: { url: 'https://example.com/hook' } },
      { method: 'POST' as const, url: `/api/v1/webhooks/${webhookId}/rotate-secret`, payload: {} },
      { method: 'POST' as const, url: `/api/v1/webhooks/${webhookId}/recover`, payload: { since: new Date().toISOString() } },
      { method: 'GET' as const, url: `/api/v1/webhooks/${webhookId}/deliveries` },
      { method: 'POST' as const, url: `/api/v1/webhooks/${webhookId}/test` },
      { method: 'DELETE' as const, url: `/api/v1/webhooks/${webhookId}` },
    ];
    for (const route of routes) expect((await ctx.api(other.apiKey, route)).statusCode, `${route.method} ${route.url}`).toBe(404);
    expect(await getWebhook(ctx, owner, webhookId)).toMatchObject({ enabled: true, disabledReason: null });
    for (const since of ['yesterday', '2026-02-30T00:00:00Z', '']) {
      const res = await ctx.api(owner.apiKey, { method: 'POST', url: `/api/v1/webhooks/${webhookId}/recover`, payload: { since } });
      expect(res.statusCode, since).toBe(400);
    }
  });
});

describe('Standard Webhooks signatures, secrets that verify anywhere, and rotation no delivery fails', () => {
  let ctx: TestContext;
  const receivers = receiverPool();
  // A context per test: the rotation test moves the service's clock a day on, and the
  // standardwebhooks package checks a delivery's timestamp against the real one.
  beforeEach(async () => {
    ctx = await createTestContext();
  });
  afterEach(() => ctx.close());
  afterAll(() => receivers.closeAll());

  it('signs id, timestamp and body: the standardwebhooks package verifies a real delivery, and refuses it 6 minutes old', async () => {
    const partner = await ctx.partner();
    const receiver = await receivers.start();
    await registerOk(ctx, partner, receiver.url);
    await payments(ctx, partner, 1);
    await ctx.runJobs();
    const [fresh] = receiver.received;
    if (!fresh) throw new Error('nothing was delivered');
    const headers = flatHeaders(fresh);
    expect(headers['webhook-id']).toBe(bodyOf(fresh).eventId);
    expect(headers['webhook-timestamp']).toBe(headers['x-service-timestamp']);
    expect(headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]{43}=$/);
    expect(standard(SECRET).verify(fresh.body, headers)).toMatchObject({ eventId: headers['webhook-id'] });
    expect(verifyWebhookRequest(fresh.body, fresh.headers, SECRET)).toBe(true);
    expect(() => standard('another-secret-0123456789').verify(fresh.body, headers)).toThrow();
    expect(verifyWebhookRequest(`${fresh.body} `, fresh.headers, SECRET)).toBe(false);

    // A delivery sent 6 minutes ago, as a captured one replayed now would be.
    ctx.advance(-6 * 60_000);
    await payments(ctx, partner, 1);
    await ctx.runJobs();
    ctx.advance(6 * 60_000);
    const stale = receiver.received[1];
    if (!stale) throw new Error('nothing was delivered');
    expect(() => standard(SECRET).verify(stale.body, flatHeaders(stale))).toThrow(/timestamp/i);
    expect(verifyWebhookRequest(stale.body, stale.headers, SECRET)).toBe(false);
    // Its signature itself is right: only its age refuses it.
    expect(verifyWebhookRequest(stale.body, stale.headers, SECRET, { toleranceSeconds: 420 })).toBe(true);
  });

  it('signs with both secrets during the rotation grace and with the new one after it', async () => {
    const partner = await ctx.partner();
    const receiver = await receivers.start();
    const webhookId = await registerOk(ctx, partner, receiver.url);
    const rotated = await rotate(ctx, partner, webhookId);
    expect(rotated.id).toBe(webhookId);
    expect(rotated.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(Date.parse(rotated.previousSecretExpiresAt) - ctx.now().getTime()).toBeGreaterThan(DAY - 60_000);

    await payments(ctx, partner, 1);
    await ctx.runJobs();
    const during = receiver.received[0];
    if (!during) throw new Error('nothing was delivered');
    expect(flatHeaders(during)['webhook-signature']?.split(' ')).toHaveLength(2);
    // A receiver still on the old secret and one already on the new both accept it.
    expect(standard(SECRET).verify(during.body, flatHeaders(during))).toBeTruthy();
    // A generated secret is in the Standard Webhooks form: the package takes it as it is.
    expect(new StandardWebhook(rotated.secret).verify(during.body, flatHeaders(during))).toBeTruthy();
    expect(verifyWebhookRequest(during.body, during.headers, [rotated.secret, SECRET])).toBe(true);
    // X-Service-Signature is the new secret's.
    expect(verifyWebhookRequest(during.body, during.headers, SECRET)).toBe(false);

    ctx.advance(DAY + 60_000);
    await payments(ctx, partner, 1);
    await ctx.runJobs();
    const after = receiver.received[1];
    if (!after) throw new Error('nothing was delivered');
    const now = () => ctx.now();
    expect(flatHeaders(after)['webhook-signature']?.split(' ')).toHaveLength(1);
    expect(verifyWebhookRequest(after.body, after.headers, rotated.secret, { now })).toBe(true);
    expect(verifyWebhookRequest(after.body, { ...after.headers, 'x-service-signature': undefined }, SECRET, { now })).toBe(false);
  });

  it('keeps only the secret a second rotation replaces, and takes a secret of the partner\'s choosing', async () => {
    const partner = await ctx.partner();
    const receiver = await receivers.start();
    const webhookId = await registerOk(ctx, partner, receiver.url);
    // No body at all is the same as {}: a generated secret.
    const bare = await ctx.api(partner.apiKey, { method: 'POST', url: `/api/v1/webhooks/${webhookId}/rotate-secret` });
    expect(bare.statusCode).toBe(200);
    expect(bare.json<Rotated>().secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    const chosen = 'partner-chosen-secret-0123456789';
    expect((await rotate(ctx, partner, webhookId, { secret: chosen })).secret).toBe(chosen);
    const second = await rotate(ctx, partner, webhookId);

    await payments(ctx, partner, 1);
    await ctx.runJobs();
    const [delivery] = receiver.received;
    if (!delivery) throw new Error('nothing was delivered');
    const now = () => ctx.now();
    expect(flatHeaders(delivery)['webhook-signature']?.split(' ')).toHaveLength(2);
    expect(verifyWebhookRequest(delivery.body, delivery.headers, [second.secret, chosen], { now })).toBe(true);
    const standardOnly = { ...delivery.headers, 'x-service-signature': undefined };
    expect(verifyWebhookRequest(delivery.body, standardOnly, chosen, { now })).toBe(true);
    expect(verifyWebhookRequest(delivery.body, standardOnly, SECRET, { now })).toBe(false);

    for (const payload of [{ secret: 'short' }, { secret: 7 }, { extra: true }]) {
      const res = await ctx.api(partner.apiKey, { method: 'POST', url: `/api/v1/webhooks/${webhookId}/rotate-secret`, payload });
      expect(res.statusCode, JSON.stringify(payload)).toBe(400);
    }
  });

  it('keys webhook-signature with the decoded bytes of a whsec_ secret, and the UTF-8 bytes of another: the standardwebhooks package verifies both', async () => {
    const partner = await ctx.partner();
    const [standardReceiver, plainReceiver] = [await receivers.start(), await receivers.start()];
    const standardSecret = whsecSecret();
    const plainSecret = 'plain-partner-secret-0123456789';
    await registerOk(ctx, partner, standardReceiver.url, ['payment.submitted'], standardSecret);
    await registerOk(ctx, partner, plainReceiver.url, ['payment.submitted'], plainSecret);
    await payments(ctx, partner, 1);
    await ctx.runJobs();
    const [toStandard] = standardReceiver.received;
    const [toPlain] = plainReceiver.received;
    if (!toStandard || !toPlain) throw new Error('nothing was delivered');

    // The whsec_ secret goes to the package as it is, and the SDK takes it the same way.
    expect(new StandardWebhook(standardSecret).verify(toStandard.body, flatHeaders(toStandard))).toMatchObject({ event: 'payment.submitted' });
    expect(() => standard(standardSecret).verify(toStandard.body, flatHeaders(toStandard))).toThrow();
    expect(verifyWebhookRequest(toStandard.body, toStandard.headers, standardSecret)).toBe(true);
    // X-Service-Signature stays keyed with the UTF-8 bytes of the secret, whatever its form.
    expect(toStandard.headers['x-service-signature']).toBe(createHmac('sha256', Buffer.from(standardSecret, 'utf8')).update(toStandard.body).digest('hex'));

    // Any other secret goes to the package as whsec_ and the base64 of its UTF-8 bytes.
    expect(standard(plainSecret).verify(toPlain.body, flatHeaders(toPlain))).toMatchObject({ event: 'payment.submitted' });
    expect(verifyWebhookRequest(toPlain.body, toPlain.headers, plainSecret)).toBe(true);
    expect(verifyWebhookRequest(toPlain.body, toPlain.headers, standardSecret)).toBe(false);
  });

  it('rotates while deliveries flow without a delivery refused by a receiver that follows the recipe', async () => {
    const partner = await ctx.partner();
    const now = () => ctx.now();
    const oldSecret = 'the-first-secret-0123456789';
    const newSecret = whsecSecret();
    // The recipe's receiver: the secrets it accepts change as the guide says. The other keeps the old one only.
    const accepted = [oldSecret];
    const following = await receivers.start([], { accept: (r) => verifyWebhookRequest(r.body, r.headers, accepted, { now }) });
    const stuck = await receivers.start([], { accept: (r) => verifyWebhookRequest(r.body, r.headers, [oldSecret], { now }) });
    const followingId = await registerOk(ctx, partner, following.url, ['payment.submitted'], oldSecret);
    const stuckId = await registerOk(ctx, partner, stuck.url, ['payment.submitted'], oldSecret);

    await payments(ctx, partner, 2);
    await ctx.runJobs();
    // 1. The receiver accepts the new secret beside the old one.
    accepted.push(newSecret);
    await payments(ctx, partner, 2);
    // 2. The rotation, with the new secret, while queued deliveries go out.
    await Promise.all([ctx.runJobs(), rotate(ctx, partner, followingId, { secret: newSecret }), rotate(ctx, partner, stuckId, { secret: newSecret })]);
    await payments(ctx, partner, 2);
    await ctx.runJobs();
    // 3. After the grace period the receiver drops the old secret.
    ctx.advance(DAY + 60_000);
    accepted.splice(accepted.indexOf(oldSecret), 1);
    await payments(ctx, partner, 2);
    await ctx.runJobs();

    expect(accepted).toEqual([newSecret]);
    expect(following.refused).toEqual([]);
    const attempts = (await log(ctx, partner, followingId)).items;
    expect(attempts).toHaveLength(8);
    expect(attempts.every((a) => a.status === 'succeeded' && a.attempt === 1)).toBe(true);
    // A receiver with only the old secret refuses X-Service-Signature from the rotation on: what the recipe prevents.
    expect(stuck.refused.length).toBeGreaterThan(0);
  });
});

describe('webhook endpoints that manage themselves', () => {
  let ctx: TestContext;
  const receivers = receiverPool();
  beforeAll(async () => {
    // A retry a day: every attempt of a dead receiver fails, a day apart, for a week.
    ctx = await createTestContext({ config: { webhookRetryScheduleMs: [0, DAY, DAY, DAY, DAY, DAY, DAY, DAY] } });
  });
  afterAll(async () => {
    await ctx.close();
    await receivers.closeAll();
  });

  it('reads and edits a webhook with the rules of registration', async () => {
    const partner = await ctx.partner();
    const receiver = await receivers.start();
    const webhookId = await registerOk(ctx, partner, receiver.url);
    const view = await getWebhook(ctx, partner, webhookId);
    expect(view).toEqual({ id: webhookId, url: receiver.url, events: ['payment.submitted'], enabled: true, disabledReason: null, createdAt: expect.any(String) });
    const listed = await ctx.api(partner.apiKey, { method: 'GET', url: '/api/v1/webhooks' });
    expect(listed.json()).toEqual([view]);

    const other = await receivers.start();
    const edited = await patch(ctx, partner, webhookId, { url: other.url, events: ['payment.confirmed', 'payment.submitted'] });
    expect(edited.statusCode).toBe(200);
    expect(edited.json()).toEqual({ ...view, url: other.url, events: ['payment.confirmed', 'payment.submitted'] });
    expect(await getWebhook(ctx, partner, webhookId)).toEqual(edited.json());
    await payments(ctx, partner, 1);
    await ctx.runJobs();
    expect(receiver.received).toHaveLength(0);
    expect(other.received).toHaveLength(1);

    for (const payload of [
      {},
      { url: 'ftp://example.com/hook' },
      { url: 'https://user:pass@example.com/hook' },
      { events: [] },
      { events: ['payment.refunded'] },
      { enabled: 'no' },
      { secret: 'whsec_0123456789abcdef' },
    ]) {
      const res = await patch(ctx, partner, webhookId, payload);
      expect(res.statusCode, JSON.stringify(payload)).toBe(400);
    }
    expect(await getWebhook(ctx, partner, webhookId)).toEqual(edited.json());
    expect((await patch(ctx, partner, UNKNOWN, { enabled: false })).statusCode).toBe(404);
  });

  it('disables a webhook whose every attempt failed for 5 days, stops its deliveries, and resumes them when enabled again', async () => {
    const partner = await ctx.partner();
    const since = new Date(Date.now() - 60_000);
    const receiver = await receivers.start(Array.from({ length: 6 }, () => 'fail' as const));
    const webhookId = await registerOk(ctx, partner, receiver.url);
    await payments(ctx, partner, 1);
    await ctx.runJobs();
    expect(receiver.received).toHaveLength(1);

    // Four more days of failed retries: failing, but not yet for 5 days.
    for (let day = 1; day <= 4; day++) {
      ctx.advance(DAY);
      await ctx.runJobs();
    }
    expect(receiver.received).toHaveLength(5);
    expect(await getWebhook(ctx, partner, webhookId)).toMatchObject({ enabled: true, disabledReason: null });

    ctx.advance(DAY);
    await ctx.runJobs();
    expect(receiver.received).toHaveLength(6);
    expect(await getWebhook(ctx, partner, webhookId)).toMatchObject({ enabled: false, disabledReason: 'failing' });
    const listed = await ctx.api(partner.apiKey, { method: 'GET', url: '/api/v1/webhooks' });
    expect(listed.json()).toEqual([expect.objectContaining({ id: webhookId, enabled: false, disabledReason: 'failing' })]);
    const metrics = await ctx.admin.inject({ method: 'GET', url: '/metrics' });
    expect(metrics.body).toMatch(/webhooks_disabled\{reason="failing"\} [1-9]/);
    const operator = await ctx.admin.inject({ method: 'GET', url: `/admin/deliveries?partnerId=${partner.id}`, headers: { authorization: `Bearer ${ctx.config.adminToken}` } });
    expect(operator.json<{ items: unknown[] }>().items).toEqual([expect.objectContaining({ status: 'pending', webhookDisabledReason: 'failing' })]);

    // Its pending retry is not sent, and a new event queues nothing for it (it is in GET /events).
    await payments(ctx, partner, 1);
    ctx.advance(DAY);
    await ctx.runJobs();
    expect(receiver.received).toHaveLength(6);
    expect((await log(ctx, partner, webhookId, '?status=pending')).items).toHaveLength(1);

    // Enabled again (the receiver is back): the pending retry goes, and recover brings the missed event.
    const enabled = await patch(ctx, partner, webhookId, { enabled: true });
    expect(enabled.json()).toMatchObject({ enabled: true, disabledReason: null });
    await ctx.runJobs();
    expect(receiver.received).toHaveLength(7);
    expect(await recover(ctx, partner, webhookId, since)).toBe(1);
    await ctx.runJobs();
    expect(receiver.received).toHaveLength(8);
    expect(new Set(receiver.received.map((r) => bodyOf(r).eventId)).size).toBe(2);
    expect(await getWebhook(ctx, partner, webhookId)).toMatchObject({ enabled: true, disabledReason: null });
  });

  it('never disables a webhook whose attempts still succeed now and then', async () => {
    const partner = await ctx.partner();
    const receiver = await receivers.start(['fail', 'fail', 'fail', 'ok', 'fail', 'fail', 'fail']);
    const webhookId = await registerOk(ctx, partner, receiver.url);
    for (let day = 0; day < 7; day++) {
      await payments(ctx, partner, 1);
      await ctx.runJobs();
      ctx.advance(DAY);
    }
    expect(receiver.received.length).toBeGreaterThan(7);
    expect(await getWebhook(ctx, partner, webhookId)).toMatchObject({ enabled: true, disabledReason: null });
  });
});

/** `n` `payment.submitted` events of the partner, each in its own transaction as a payment writes it. */
async function submitted(ctx: TestContext, partnerId: string, n: number): Promise<string[]> {
  const events = createOutbox({ now: ctx.now });
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    ids.push(await unitOfWorkRunner(ctx.deps.db)((uow) => events.append(uow, partnerId, { event: 'payment.submitted', data: { id: `${partnerId}-${i}`, invoiceId: 'inv', partnerReference: null } })));
  }
  return ids;
}

async function deliveriesOf(ctx: TestContext, webhookId: string) {
  return ctx.deps.db.selectFrom('webhook_deliveries').select(['id', 'event_id', 'status', 'attempts', 'next_attempt_at']).where('webhook_id', '=', webhookId).execute();
}

/** A counter's value in /metrics (0 before its first increment). */
async function counter(ctx: TestContext, name: string): Promise<number> {
  const body = (await ctx.admin.inject({ method: 'GET', url: '/metrics' })).body;
  const line = body.split('\n').find((l) => l.startsWith(`${name} `));
  return line ? Number(line.split(' ')[1]) : 0;
}

const receivedEventIds = (r: { received: ReceivedRequest[] }) => r.received.map((x) => bodyOf(x).eventId);

describe('recovery that sends now what waits for a retry', () => {
  let ctx: TestContext;
  const receivers = receiverPool();
  const BATCH = 10;
  beforeAll(async () => {
    // Retries hours apart, as by default: a receiver down for a moment waits 2 hours for its next attempt.
    ctx = await createTestContext({ config: { webhookRetryScheduleMs: [0, 2 * HOUR, 10 * HOUR], webhookRecoverBatch: BATCH } });
  });
  afterAll(async () => {
    await ctx.close();
    await receivers.closeAll();
  });

  it('makes the deliveries that failed while the receiver was down due at once: each arrives once more, and a second recover adds nothing', async () => {
    const partner = await ctx.partner();
    const since = new Date(ctx.now().getTime() - 60_000);
    const receiver = await receivers.start(['fail', 'fail', 'fail']);
    const webhookId = await registerOk(ctx, partner, receiver.url);
    await payments(ctx, partner, 3);
    await ctx.runJobs();
    expect(receiver.received).toHaveLength(3);
    const missed = receivedEventIds(receiver);
    // Each waits for a retry 2 hours away: another pass sends nothing.
    const waiting = (await log(ctx, partner, webhookId, '?status=pending')).items;
    expect(waiting).toHaveLength(3);
    for (const item of waiting) expect(Date.parse(item.nextRetryAt ?? '') - ctx.now().getTime()).toBeGreaterThan(HOUR);
    await ctx.runJobs();
    expect(receiver.received).toHaveLength(3);

    // The receiver is back.
    expect(await recover(ctx, partner, webhookId, since)).toBe(3);
    expect(await recover(ctx, partner, webhookId, since)).toBe(0);
    await vi.waitFor(async () => {
      await ctx.runJobs();
      expect(receiver.received).toHaveLength(6);
    }, ARRIVAL);
    expect(receivedEventIds(receiver).slice(3).sort()).toEqual([...missed].sort());
    expect((await deliveriesOf(ctx, webhookId)).map((d) => d.status)).toEqual(['delivered', 'delivered', 'delivered']);

    // Once each: neither the old retry times nor another recover send anything more.
    ctx.advance(11 * HOUR);
    await ctx.runJobs();
    ctx.advance(-11 * HOUR);
    expect(await recover(ctx, partner, webhookId, since)).toBe(0);
    await ctx.runJobs();
    expect(receiver.received).toHaveLength(6);
  });

  it('sends the waiting deliveries at once when a disabled webhook is enabled again', async () => {
    const partner = await ctx.partner();
    const receiver = await receivers.start(['fail', 'fail']);
    const webhookId = await registerOk(ctx, partner, receiver.url);
    await payments(ctx, partner, 2);
    await ctx.runJobs();
    expect(receiver.received).toHaveLength(2);
    const missed = receivedEventIds(receiver);

    expect((await patch(ctx, partner, webhookId, { enabled: false })).statusCode).toBe(200);
    await ctx.runJobs();
    expect(receiver.received).toHaveLength(2);
    expect((await patch(ctx, partner, webhookId, { enabled: true })).json()).toMatchObject({ enabled: true, disabledReason: null });
    await vi.waitFor(async () => {
      await ctx.runJobs();
      expect(receiver.received).toHaveLength(4);
    }, ARRIVAL);
    expect(receivedEventIds(receiver).slice(2).sort()).toEqual([...missed].sort());
    expect((await deliveriesOf(ctx, webhookId)).every((d) => d.status === 'delivered')).toBe(true);
  });

  it('refuses a since older than the event retention, naming it', async () => {
    const partner = await ctx.partner();
    const webhookId = await registerOk(ctx, partner, (await receivers.start()).url);
    const retention = ctx.config.retention.eventMs;
    expect(retention).toBe(90 * DAY);
    const res = await ctx.api(partner.apiKey, {
      method: 'POST',
      url: `/api/v1/webhooks/${webhookId}/recover`,
      payload: { since: new Date(ctx.now().getTime() - retention - HOUR).toISOString() },
    });
    expect(res.statusCode).toBe(400);
    expect(res.json<{ message: string[] }>().message).toEqual([expect.stringMatching(/^since must be within the event retention of 90 days/)]);
    expect(await recover(ctx, partner, webhookId, new Date(ctx.now().getTime() - retention + HOUR))).toBe(0);
  });

  it('queues a failed, a canceled and a missing delivery again, and leaves a delivered one alone', async () => {
    const partner = await ctx.partner();
    const receiver = await receivers.start();
    const webhookId = await registerOk(ctx, partner, receiver.url);
    expect((await patch(ctx, partner, webhookId, { enabled: false })).statusCode).toBe(200);
    const since = new Date(ctx.now().getTime() - 60_000);
    const [missing, failed, canceled, delivered] = await submitted(ctx, partner.id, 4);
    expect((await patch(ctx, partner, webhookId, { enabled: true })).statusCode).toBe(200);
    for (const [eventId, status] of [[failed, 'failed'], [canceled, 'canceled'], [delivered, 'delivered']] as const) {
      await ctx.deps.db
        .insertInto('webhook_deliveries')
        .values({ webhook_id: webhookId, event_id: eventId ?? '', status, attempts: 1, next_attempt_at: ctx.now(), created_at: eventTime(eventId) })
        .execute();
    }

    expect(await recover(ctx, partner, webhookId, since)).toBe(3);
    expect(await recover(ctx, partner, webhookId, since)).toBe(0);
    await ctx.runJobs();
    expect(receivedEventIds(receiver).sort()).toEqual([missing, failed, canceled].sort());
    const rows = await deliveriesOf(ctx, webhookId);
    expect(rows).toHaveLength(4);
    expect(rows.every((d) => d.status === 'delivered')).toBe(true);
  });

  it('goes in batches of WEBHOOK_RECOVER_BATCH: a few hundred events each queued once, a batch per statement', async () => {
    const partner = await ctx.partner();
    const webhookId = await registerOk(ctx, partner, (await receivers.start()).url);
    // Disabled meanwhile: the events queue nothing, and what recover queues waits (nothing is sent yet).
    expect((await patch(ctx, partner, webhookId, { enabled: false })).statusCode).toBe(200);
    const since = new Date(ctx.now().getTime() - 60_000);
    const events = await submitted(ctx, partner.id, 300);
    // One of them already has a delivery, its first attempt 2 hours away: made due in its batch, counted once.
    const later = () => new Date(ctx.now().getTime() + 2 * HOUR);
    await ctx.deps.db
      .insertInto('webhook_deliveries')
      .values({ webhook_id: webhookId, event_id: events[150] ?? '', status: 'pending', next_attempt_at: later(), created_at: eventTime(events[150]) })
      .execute();

    const batches = await counter(ctx, 'webhook_recover_batches_total');
    const recovered = await counter(ctx, 'webhook_recovered_deliveries_total');
    expect(await recover(ctx, partner, webhookId, since)).toBe(300);
    // 30 full batches of 10, and one that found nothing more: none can have held more than 10.
    expect(await counter(ctx, 'webhook_recover_batches_total')).toBe(batches + 31);
    expect(await counter(ctx, 'webhook_recovered_deliveries_total')).toBe(recovered + 300);

    // Asked again, and twice at once: nothing more.
    expect(await Promise.all([recover(ctx, partner, webhookId, since), recover(ctx, partner, webhookId, since)])).toEqual([0, 0]);
    const rows = await deliveriesOf(ctx, webhookId);
    expect(rows).toHaveLength(300);
    expect(new Set(rows.map((d) => d.event_id))).toEqual(new Set(events));
    expect(rows.every((d) => d.status === 'pending' && d.next_attempt_at.getTime() <= ctx.now().getTime())).toBe(true);

    // Enabling makes waiting deliveries due in batches too.
    await ctx.deps.db.updateTable('webhook_deliveries').set({ next_attempt_at: later() }).where('webhook_id', '=', webhookId).execute();
    const enabling = await counter(ctx, 'webhook_recover_batches_total');
    expect((await patch(ctx, partner, webhookId, { enabled: true })).statusCode).toBe(200);
    expect(await counter(ctx, 'webhook_recover_batches_total')).toBe(enabling + 31);
    expect(await counter(ctx, 'webhook_recovered_deliveries_total')).toBe(recovered + 600);
    // Due now, each once: none waits for its time 2 hours away any more (the delivery job, woken, may be sending some already).
    const after = await deliveriesOf(ctx, webhookId);
    expect(after).toHaveLength(300);
    expect(after.filter((d) => d.attempts === 0 && d.next_attempt_at.getTime() > ctx.now().getTime())).toEqual([]);
  });
});

describe('a large recovery beside other partners', () => {
  let ctx: TestContext;
  const receivers = receiverPool();
  const CONCURRENCY = { total: 32, perEndpoint: 2, perPartner: 5 };
  beforeEach(async () => {
    // Attempts to a hanging receiver stay in flight for the whole test.
    ctx = await createTestContext({ config: { webhookRecoverBatch: 25, webhookTimeoutMs: 60_000, webhookConcurrency: CONCURRENCY } });
  });
  afterEach(async () => {
    await receivers.closeAll();
    await ctx.close();
  });

  it("delivers another partner's fresh event while a recovery of hundreds is under way", async () => {
    const big = await ctx.partner();
    const other = await ctx.partner();
    const hanging = await receivers.start(Array(400).fill('hang'));
    const bigHook = await registerOk(ctx, big, hanging.url);
    expect((await patch(ctx, big, bigHook, { enabled: false })).statusCode).toBe(200);
    const since = new Date(ctx.now().getTime() - 60_000);
    await submitted(ctx, big.id, 300);
    expect((await patch(ctx, big, bigHook, { enabled: true })).statusCode).toBe(200);
    const healthy = await receivers.start();
    const otherHook = await registerOk(ctx, other, healthy.url);

    const job = ctx.deps.jobs.find((j) => j.name === 'webhook-delivery');
    if (!job) throw new Error('no webhook delivery job');
    const recovering = recover(ctx, big, bigHook, since);
    const [fresh] = await submitted(ctx, other.id, 1);
    await job.run();
    expect(await recovering).toBe(300);
    await job.run();

    await vi.waitFor(() => expect(receivedEventIds(healthy)).toEqual([fresh]), ARRIVAL);
    await vi.waitFor(async () => expect((await deliveriesOf(ctx, otherHook))[0]?.status).toBe('delivered'), ARRIVAL);
    // The recovered deliveries hold no more than their partner's slots; the rest wait their turn.
    const claimed = (await deliveriesOf(ctx, bigHook)).filter((d) => d.attempts > 0);
    expect(claimed.length).toBeLessThanOrEqual(CONCURRENCY.perEndpoint);
    expect(hanging.received.length).toBeLessThanOrEqual(CONCURRENCY.perEndpoint);
  });

  it('leaves a delivery being sent alone: neither recover nor enabling sends it a second time meanwhile', async () => {
    const partner = await ctx.partner();
    const hanging = await receivers.start(['hang']);
    const webhookId = await registerOk(ctx, partner, hanging.url);
    const since = new Date(ctx.now().getTime() - 60_000);
    await submitted(ctx, partner.id, 1);
    const job = ctx.deps.jobs.find((j) => j.name === 'webhook-delivery');
    if (!job) throw new Error('no webhook delivery job');
    await job.run();
    await vi.waitFor(() => expect(hanging.received).toHaveLength(1), ARRIVAL);
    // Claimed: due again only when its lease runs out, which looks like a retry waiting.
    const [claimed] = await deliveriesOf(ctx, webhookId);
    expect(claimed).toMatchObject({ status: 'pending', attempts: 1 });
    expect(claimed?.next_attempt_at.getTime()).toBeGreaterThan(ctx.now().getTime());

    expect(await recover(ctx, partner, webhookId, since)).toBe(0);
    expect((await patch(ctx, partner, webhookId, { enabled: true })).statusCode).toBe(200);
    await job.run();
    expect(await deliveriesOf(ctx, webhookId)).toEqual([claimed]);
    expect(hanging.received).toHaveLength(1);
    expect(hanging.overlapping).toEqual([]);
  });
});
