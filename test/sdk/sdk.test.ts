import { createHmac, randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  ApiError,
  AuthenticationError,
  BadRequestError,
  CaseAlreadyOpenError,
  ConflictError,
  ForbiddenError,
  NetworkError,
  NotFoundError,
  PaymentFailedError,
  RateLimitError,
  ServerError,
  createClient,
  parseRetryAfter,
  parseWebhook,
  verifyWebhook,
  WebhookVerificationError,
  ERROR_CODES,
  type CaseResolution,
  type ErrorCode,
  type FetchLike,
  type InvoiceSearch,
  type PaymentChannelClient,
} from '../../sdk/src/index.js';
import { errorFromResponse } from '../../sdk/src/errors.js';
import { createTestContext, type TestContext } from '../helpers/test-context.js';
import { PLATE, REG, TAX_REF } from '../helpers/fixtures.js';
import { addOwnInvoice } from '../helpers/own-invoice.js';
import { startReceiver } from '../helpers/webhook-receiver.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** A fetch that records every request it forwards to the real one. */
function recordingFetch(): { fetch: FetchLike; calls: { url: string; method: string; headers: Headers; body: string | undefined }[] } {
  const calls: { url: string; method: string; headers: Headers; body: string | undefined }[] = [];
  return {
    calls,
    fetch: (input, init) => {
      calls.push({ url: input, method: init.method ?? 'GET', headers: new Headers(init.headers), body: typeof init.body === 'string' ? init.body : undefined });
      return globalThis.fetch(input, init);
    },
  };
}

describe('SDK against the real service', () => {
  let ctx: TestContext;
  let baseUrl: string;
  let apiKey: string;
  let client: PaymentChannelClient;
  let recorder: ReturnType<typeof recordingFetch>;

  beforeAll(async () => {
    ctx = await createTestContext();
    await ctx.app.listen({ port: 0, host: '127.0.0.1' });
    const { port } = ctx.app.server.address() as AddressInfo;
    baseUrl = `http://127.0.0.1:${port}/api/v1`;
    apiKey = (await ctx.partner()).apiKey;
    recorder = recordingFetch();
    client = createClient({ baseUrl, apiKey, fetch: recorder.fetch, retryBaseMs: 1 });
  });
  afterAll(() => ctx.close());

  it('reads health without a key', async () => {
    const noKey = createClient({ baseUrl, apiKey: 'unused' });
    const live = await noKey.health.live();
    expect(live.status).toBe('ok');
    expect(Number.isNaN(Date.parse(live.timestamp))).toBe(false);
    const ready = await noKey.health.ready();
    expect(ready).toMatchObject({ status: 'ok', db: 'ok' });
  });

  it('searches by taxpayer number, plate and tax reference', async () => {
    const byTtd = await client.invoices.search({ ttd: REG });
    // The fixtures give the taxpayer eight invoices over the three sources (test/helpers/fixtures.ts).
    expect(byTtd.invoices).toHaveLength(8);
    for (const inv of byTtd.invoices) {
      expect(inv.id).toMatch(UUID);
      expect(inv.payer?.register).toBe(REG);
      expect(inv).not.toHaveProperty('refNum');
      expect(inv).not.toHaveProperty('source');
    }
    // `total` is the sum of the listed amounts, not a count.
    expect(byTtd.total).toBeCloseTo(byTtd.invoices.reduce((s, i) => s + i.amount, 0), 2);

    const byPlate = await client.invoices.search({ vehicle: PLATE });
    expect(byPlate.invoices.map((i) => i.vehicleNo)).toEqual(byPlate.invoices.map(() => PLATE));
    const byTaxRef = await client.invoices.search({ taxRef: TAX_REF });
    expect(byTaxRef.invoices).toHaveLength(1);
    expect(byTaxRef.invoices[0]?.amount).toBe(25000.25);
  });

  it('looks up by refNum, then reads the stored copy and refreshes it', async () => {
    const live = await client.invoices.byRef('MOF-T-1');
    expect(live).toMatchObject({ amount: 12000.5, status: 'open', year: 2025 });
    const stored = await client.invoices.get(live.id);
    expect(stored).toEqual(live);
    const refreshed = await client.invoices.refresh(live.id);
    expect(refreshed.id).toBe(live.id);
  });

  it('pays with an automatic idempotency key, polls, confirms and cancels', async () => {
    const invoice = await client.invoices.byRef('MOF-T-OVERDUE');
    recorder.calls.length = 0;
    const created = await client.payments.create({ invoiceId: invoice.id });
    expect(created).toMatchObject({ success: true, status: 'submitted', amount: 5000, invoiceId: invoice.id, invoiceIds: [invoice.id] });
    expect(created.qrpay?.qrText).toMatch(/^000201/);
    expect(created.qrpay?.urls.length).toBeGreaterThan(0);

    const post = recorder.calls.find((c) => c.method === 'POST');
    const key = post?.headers.get('x-idempotency-key');
    expect(key).toMatch(UUID);
    expect(JSON.parse(post?.body ?? '{}')).toEqual({ invoiceId: invoice.id });

    // Each call is its own logical payment attempt: a new key (the invoice is already held, so 422).
    recorder.calls.length = 0;
    await expect(client.payments.create({ invoiceId: invoice.id })).rejects.toBeInstanceOf(ApiError);
    expect(recorder.calls[0]?.headers.get('x-idempotency-key')).not.toBe(key);
    expect(post?.headers.get('x-user-id')).toBeNull();

    // The end user, for pushes, travels as X-User-Id.
    recorder.calls.length = 0;
    await expect(client.payments.create({ invoiceId: invoice.id }, { userId: 'user-42' })).rejects.toBeInstanceOf(ApiError);
    expect(recorder.calls[0]?.headers.get('x-user-id')).toBe('user-42');

    const polled = await client.payments.get(created.id);
    expect(polled).toMatchObject({ id: created.id, status: 'submitted' });
    expect(polled.paidAt).toBeUndefined();

    await ctx.sim('/__control/approve', { refNum: 'MOF-T-OVERDUE' });
    const confirmed = await client.payments.get(created.id);
    expect(confirmed.status).toBe('confirmed');
    expect(Number.isNaN(Date.parse(confirmed.paidAt ?? ''))).toBe(false);
    expect((await client.invoices.get(invoice.id)).status).toBe('paid');

    const canceled = await client.payments.cancel(created.id);
    expect(canceled).toEqual({ id: created.id, canceled: true });
    expect((await client.invoices.get(invoice.id)).status).not.toBe('paid');

    // Canceling twice is not a move of the transition table: 409.
    const again = await client.payments.cancel(created.id).catch((e: unknown) => e);
    expect(again).toBeInstanceOf(ConflictError);
    expect((again as ConflictError).status).toBe(409);
  });

  it('replays a payment when the caller supplies the same idempotency key', async () => {
    const invoice = await client.invoices.byRef('ET-T-1');
    const idempotencyKey = randomUUID();
    const first = await client.payments.create({ invoiceId: invoice.id, amount: 25000.25 }, { idempotencyKey });
    const replay = await client.payments.create({ invoiceId: invoice.id, amount: 25000.25 }, { idempotencyKey });
    expect(replay.id).toBe(first.id);
    expect(replay.message).toBe('idempotent');
    await client.payments.cancel(first.id);
  });

  it('maps 400 to BadRequestError with the messages array and the request id', async () => {
    const notUuid = await client.invoices.get('not-a-uuid').catch((e: unknown) => e);
    expect(notUuid).toBeInstanceOf(BadRequestError);
    const err = notUuid as BadRequestError;
    expect(err.status).toBe(400);
    expect(Array.isArray(err.messages)).toBe(true);
    expect(err.messages.length).toBeGreaterThan(0);
    expect(err.requestId).toBeTruthy();
    expect(err.body).toMatchObject({ statusCode: 400, error: 'Bad Request', requestId: err.requestId });
    expect(err.code).toBe('invalid_request');
    expect(err.errors).toEqual([{ path: '/id', message: 'id must be a UUID' }]);

    const twoFilters = { ttd: REG, vehicle: PLATE } as unknown as InvoiceSearch;
    const many = await client.invoices.search(twoFilters).catch((e: unknown) => e);
    expect(many).toBeInstanceOf(BadRequestError);
    expect((many as BadRequestError).messages.length).toBeGreaterThan(0);

    const badAmount = await client.payments.create({ invoiceId: randomUUID(), amount: -5 }).catch((e: unknown) => e);
    expect(badAmount).toBeInstanceOf(BadRequestError);
    expect((badAmount as BadRequestError).errors.map((e) => e.path)).toEqual(['/amount']);
  });

  it('maps 401, 403 and 404', async () => {
    const badKey = createClient({ baseUrl, apiKey: 'gpk_sandbox_wrong' });
    const unauthorized = await badKey.reports.summary().catch((e: unknown) => e);
    expect(unauthorized).toBeInstanceOf(AuthenticationError);
    expect((unauthorized as AuthenticationError).status).toBe(401);
    expect((unauthorized as AuthenticationError).code).toBe('unauthenticated');

    const inactive = await ctx.partner({ active: false });
    const forbidden = await createClient({ baseUrl, apiKey: inactive.apiKey })
      .invoices.search({ ttd: REG })
      .catch((e: unknown) => e);
    expect(forbidden).toBeInstanceOf(ForbiddenError);
    expect((forbidden as ForbiddenError).status).toBe(403);
    expect((forbidden as ForbiddenError).code).toBe('partner_inactive');

    await expect(client.invoices.get(randomUUID())).rejects.toBeInstanceOf(NotFoundError);
    await expect(client.payments.get(randomUUID())).rejects.toBeInstanceOf(NotFoundError);
    const unknownRef = await client.invoices.byRef('NO-SUCH-REF').catch((e: unknown) => e);
    expect(unknownRef).toBeInstanceOf(NotFoundError);
    expect((unknownRef as NotFoundError).requestId).toBeTruthy();
    expect((unknownRef as NotFoundError).code).toBe('not_found');
  });

  it('maps a ministry refusal to PaymentFailedError with the refNum', async () => {
    const invoice = await client.invoices.byRef('MOF-T-REJECT');
    recorder.calls.length = 0;
    const err = await client.payments.create({ invoiceId: invoice.id }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PaymentFailedError);
    const failed = err as PaymentFailedError;
    expect(failed.status).toBe(422);
    expect(failed.refNum).toBe('MOF-T-REJECT');
    expect(failed.body).toMatchObject({ success: false, refNum: 'MOF-T-REJECT', code: 'ministry_rejected', requestId: failed.requestId });
    expect(failed.code).toBe('ministry_rejected');
    // 422 is never retried.
    expect(recorder.calls).toHaveLength(1);
  });

  it('reads the summary, the payment list and the settlement report', async () => {
    // Its own partner with two payments of its own, whatever the other tests paid or canceled.
    const own = createClient({ baseUrl, apiKey: (await ctx.partner()).apiKey, retryBaseMs: 1 });
    const paymentIds: string[] = [];
    const refNums: string[] = [];
    for (const source of ['mof', 'police'] as const) {
      const { refNum } = await addOwnInvoice(ctx, source, { amount: 10000 });
      refNums.push(refNum);
      paymentIds.push((await own.payments.create({ invoiceId: (await own.invoices.byRef(refNum)).id })).id);
    }

    // Both invoices retrieved and open (a submitted payment leaves its invoice open until confirmed).
    const summary = await own.reports.summary();
    expect(summary).toEqual({ total: 2, open: 2, overdue: 0, paid: 0, totalAmountDue: 20000 });

    const list = await own.reports.payments({ page: 1, limit: 2 });
    expect(list).toMatchObject({ page: 1, limit: 2, total: 2 });
    expect(list.items).toHaveLength(2);
    expect(list.items.map((i) => i.id).sort()).toEqual([...paymentIds].sort());
    expect(list.items.map((i) => i.refNum).sort()).toEqual([...refNums].sort());
    const defaults = await own.reports.payments();
    expect(defaults).toMatchObject({ page: 1, limit: 20, total: 2 });

    // Nothing of the partner's is confirmed, so its settlement has no entries.
    const financeDay = new Date(Date.now() + 8 * 3600_000).toISOString().slice(0, 10);
    const report = await own.payments.settlement(financeDay);
    expect(report).toEqual({ financeDay, success: true, entries: [] });
    await expect(own.payments.settlement('yesterday')).rejects.toBeInstanceOf(BadRequestError);
  });

  it('registers a webhook, receives a signed delivery that verifyWebhook accepts, lists and deletes it', async () => {
    const received: { body: string; signature: string | undefined; event: string | undefined }[] = [];
    const receiver = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const sig = req.headers['x-service-signature'];
        const event = req.headers['x-service-event'];
        received.push({ body: Buffer.concat(chunks).toString('utf8'), signature: typeof sig === 'string' ? sig : undefined, event: typeof event === 'string' ? event : undefined });
        res.writeHead(204).end();
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = receiver.address() as AddressInfo;
      const secret = 'whsec-sdk-test-secret-0123456789';
      const created = await client.webhooks.create({ url: `http://127.0.0.1:${port}/hook`, secret, events: ['payment.submitted'] });
      expect(created).toMatchObject({ id: expect.stringMatching(UUID), secret, events: ['payment.submitted'] });

      const listed = await client.webhooks.list();
      const mine = listed.find((w) => w.id === created.id);
      expect(mine).toBeDefined();
      expect(mine).not.toHaveProperty('secret');

      const invoice = await client.invoices.byRef('MOF-T-LINK-A');
      const payment = await client.payments.create({ invoiceId: invoice.id });
      // One job pass delivers it; the poll only bounds a regression instead of hanging.
      await expect.poll(async () => {
        await ctx.runJobs();
        return received.length;
      }).toBe(1);
      const delivery = received[0];
      expect(delivery?.event).toBe('payment.submitted');
      expect(verifyWebhook(delivery?.body ?? '', delivery?.signature, secret)).toBe(true);
      expect(verifyWebhook(delivery?.body ?? '', delivery?.signature, 'a-different-secret-0123')).toBe(false);
      const message = parseWebhook(Buffer.from(delivery?.body ?? ''), delivery?.signature, secret);
      expect(message).toMatchObject({ event: 'payment.submitted', data: { id: payment.id, invoiceId: invoice.id } });

      const log = await client.webhooks.deliveries(created.id, { limit: 10 });
      expect(log.items[0]).toMatchObject({ event: 'payment.submitted', status: 'succeeded', statusCode: 204, attempt: 1 });
      expect(await client.webhooks.delete(created.id)).toEqual({ id: created.id, deleted: true });
      expect((await client.webhooks.list()).some((w) => w.id === created.id)).toBe(false);
      await client.payments.cancel(payment.id);
    } finally {
      receiver.closeAllConnections();
      await new Promise<void>((resolve) => receiver.close(() => resolve()));
    }
  });

  it('sends a test delivery and redelivers it', async () => {
    const receiver = await startReceiver();
    const header = (i: number, name: string) => {
      const value = receiver.received[i]?.headers[name];
      return typeof value === 'string' ? value : undefined;
    };
    try {
      const secret = 'whsec-sdk-tools-secret-0123456789';
      const created = await client.webhooks.create({ url: receiver.url, secret, events: ['payment.confirmed'] });

      const queued = await client.webhooks.test(created.id);
      expect(queued).toEqual({ deliveryId: expect.stringMatching(UUID), event: 'webhook.test' });
      await expect.poll(async () => {
        await ctx.runJobs();
        return receiver.received.length;
      }).toBe(1);
      expect(header(0, 'x-service-event')).toBe('webhook.test');
      const message = parseWebhook(receiver.received[0]?.body ?? '', header(0, 'x-service-signature'), secret);
      expect(message).toMatchObject({ event: 'webhook.test', deliveryId: queued.deliveryId, data: { webhookId: created.id, message: 'test delivery' } });

      expect(await client.webhooks.redeliver(created.id, queued.deliveryId)).toEqual({ deliveryId: queued.deliveryId, status: 'pending' });
      await expect.poll(async () => {
        await ctx.runJobs();
        return receiver.received.length;
      }).toBe(2);
      const log = await client.webhooks.deliveries(created.id);
      expect(log.items.map((i) => [i.event, i.deliveryId, i.attempt, i.status])).toEqual([
        ['webhook.test', queued.deliveryId, 2, 'succeeded'],
        ['webhook.test', queued.deliveryId, 1, 'succeeded'],
      ]);

      await expect(client.webhooks.redeliver(created.id, randomUUID())).rejects.toBeInstanceOf(NotFoundError);
      await client.webhooks.delete(created.id);
      await expect(client.webhooks.test(created.id)).rejects.toBeInstanceOf(NotFoundError);
      await expect(client.webhooks.redeliver(created.id, queued.deliveryId)).rejects.toBeInstanceOf(NotFoundError);
    } finally {
      await receiver.close();
    }
  });

  it('plants sandbox scenario invoices and walks their payments', async () => {
    const { scenarios } = await client.sandbox.scenarios();
    expect(scenarios.map((s) => s.name)).toContain('fail-after-submit');

    const invoice = await client.sandbox.createInvoice({ scenario: 'approve', amount: 2500.5 });
    expect(invoice).toMatchObject({ id: expect.stringMatching(UUID), amount: 2500.5, status: 'open' });
    const payment = await client.payments.create({ invoiceId: invoice.id });
    expect(await client.sandbox.approve(payment.id)).toEqual({ id: payment.id, approved: true });
    expect((await client.payments.get(payment.id)).status).toBe('confirmed');

    const refused = await client.sandbox.createInvoice({ scenario: 'reject' });
    await expect(client.payments.create({ invoiceId: refused.id })).rejects.toBeInstanceOf(PaymentFailedError);
    await expect(client.sandbox.createInvoice({ scenario: 'approve', amount: 1.005 })).rejects.toBeInstanceOf(BadRequestError);
  });

  it('opens a case, refuses a second one of its type naming the open one, and reads it back with the comment added', async () => {
    const invoice = await client.sandbox.createInvoice({ scenario: 'approve', amount: 12000 });
    const payment = await client.payments.create({ invoiceId: invoice.id });
    const opened = await client.cases.open({ paymentId: payment.id, type: 'wrong_amount', description: 'Charged 12 000 instead of 10 000' });
    expect(opened).toEqual({
      id: expect.stringMatching(UUID),
      paymentId: payment.id,
      type: 'wrong_amount',
      status: 'open',
      description: 'Charged 12 000 instead of 10 000',
      createdAt: expect.any(String),
      dueAt: new Date(Date.parse(opened.createdAt) + 120 * 3_600_000).toISOString(),
      updatedAt: opened.createdAt,
      resolution: null,
    });

    const again = await client.cases.open({ paymentId: payment.id, type: 'wrong_amount', description: 'The customer called again' }).catch((e: unknown) => e);
    expect(again).toBeInstanceOf(CaseAlreadyOpenError);
    expect(again).toBeInstanceOf(ConflictError);
    const conflict = again as CaseAlreadyOpenError;
    expect(conflict).toMatchObject({ status: 409, code: 'case_already_open', caseId: opened.id, requestId: expect.any(String) });
    expect(conflict.body).toMatchObject({ statusCode: 409, error: 'Conflict', code: 'case_already_open', caseId: opened.id });

    const commented = await client.cases.comment(conflict.caseId, 'The customer called again: the statement shows 12 000 debited');
    expect(commented).toEqual({
      ...opened,
      updatedAt: expect.any(String),
      comments: [{ author: 'partner', text: 'The customer called again: the statement shows 12 000 debited', createdAt: expect.any(String) }],
    });
    expect(await client.cases.get(opened.id)).toEqual(commented);

    await expect(client.cases.get(randomUUID())).rejects.toBeInstanceOf(NotFoundError);
    const foreign = await client.cases.open({ paymentId: randomUUID(), type: 'other', description: 'not a payment of ours' }).catch((e: unknown) => e);
    expect(foreign).toBeInstanceOf(NotFoundError);
    expect(foreign).not.toBeInstanceOf(CaseAlreadyOpenError);
  });

  it('pages through the cases, newest first, by list and by iterate', async () => {
    // A partner of its own: the list holds exactly its three cases.
    const own = createClient({ baseUrl, apiKey: (await ctx.partner()).apiKey, retryBaseMs: 1 });
    const payment = await own.payments.create({ invoiceId: (await own.sandbox.createInvoice({ scenario: 'approve' })).id });
    const ids: string[] = [];
    for (const type of ['paid_twice', 'wrong_amount', 'other'] as const) ids.push((await own.cases.open({ paymentId: payment.id, type, description: `case ${type}` })).id);
    const newestFirst = [...ids].reverse();

    const first = await own.cases.list({ limit: 2 });
    expect(first.items.map((c) => c.id)).toEqual(newestFirst.slice(0, 2));
    expect(first.items[0]).not.toHaveProperty('comments');
    expect(first.nextCursor).toEqual(expect.any(String));
    const second = await own.cases.list({ limit: 2, cursor: first.nextCursor ?? undefined });
    expect(second.items.map((c) => c.id)).toEqual(newestFirst.slice(2));
    expect(second.nextCursor).toBeNull();

    const iterated: string[] = [];
    for await (const item of own.cases.iterate({ paymentId: payment.id, status: 'open', limit: 2 })) iterated.push(item.id);
    expect(iterated).toEqual(newestFirst);
    expect((await own.cases.list({ status: 'resolved' })).items).toEqual([]);

    // A cursor is bound to the partner it was given to.
    await expect(client.cases.list({ cursor: first.nextCursor ?? undefined })).rejects.toBeInstanceOf(BadRequestError);
  });

  it('has a paid_not_updated case answered by the service, and reads its case events typed as the case', async () => {
    const own = createClient({ baseUrl, apiKey: (await ctx.partner()).apiKey, retryBaseMs: 1 });
    const payment = await own.payments.create({ invoiceId: (await own.sandbox.createInvoice({ scenario: 'approve' })).id });
    await own.sandbox.approve(payment.id);
    const opened = await own.cases.open({ paymentId: payment.id, type: 'paid_not_updated', description: 'Paid in the app; the tax office shows it unpaid' });
    expect(Date.parse(opened.dueAt) - Date.parse(opened.createdAt)).toBe(24 * 3_600_000);

    // One pass of the jobs gathers the evidence and answers it; the poll only bounds a regression.
    await expect.poll(async () => {
      await ctx.runJobs();
      return (await own.cases.get(opened.id)).status;
    }).toBe('resolved');
    const resolved = await own.cases.get(opened.id);
    expect(resolved.resolution).toEqual({ outcome: 'confirmed', note: expect.any(String), resolvedAt: expect.any(String), by: 'service' });
    expect((await own.payments.get(payment.id)).status).toBe('confirmed');

    const { items } = await own.events.list({ paymentId: payment.id, limit: 100 });
    expect(items.map((e) => String(e.type))).toEqual(expect.arrayContaining(['payment.confirmed', 'case.opened', 'case.resolved']));
    const event = items.find((e) => e.type === 'case.resolved');
    if (event?.type !== 'case.resolved') throw new Error('no case.resolved event');
    // `type` narrowed `data` to the case: its resolution is typed without a cast.
    const resolution: CaseResolution | null = event.data.resolution;
    expect(resolution).toEqual(resolved.resolution);
    expect(event.data).toEqual(resolved);

    const one = await own.events.get(event.id);
    expect(one.type).toBe('case.resolved');
    if (one.type === 'case.resolved') expect(one.data.resolution?.by).toBe('service');
    const opening = (await own.events.list({ paymentId: payment.id, type: 'case.opened' })).items;
    expect(opening.map((e) => (e.type === 'case.opened' ? [e.data.id, e.data.status, e.data.comments] : null))).toEqual([[opened.id, 'open', []]]);
  });

  it('registers a push device (upsert)', async () => {
    const first = await client.devices.register({ userId: 'user-42', fcmToken: 'fcm-token-abc', platform: 'android' });
    expect(first).toMatchObject({ id: expect.stringMatching(UUID), platform: 'android' });
    const again = await client.devices.register({ userId: 'user-42', fcmToken: 'fcm-token-abc', platform: 'ios' });
    expect(again).toMatchObject({ id: first.id, platform: 'ios' });
  });
});

type Handler = (req: IncomingMessage, body: string, res: ServerResponse) => void;

interface FakeServer {
  baseUrl: string;
  calls: { method: string; url: string; headers: IncomingMessage['headers']; body: string }[];
  respond(handler: Handler): void;
  close(): Promise<void>;
}

/** A tiny scripted HTTP server standing in for the service. */
async function fakeServer(): Promise<FakeServer> {
  let handler: Handler = (_req, _body, res) => json(res, 200, {});
  const calls: FakeServer['calls'] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      calls.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body });
      handler(req, body, res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}/api/v1`,
    calls,
    respond(h) {
      handler = h;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

function json(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'x-request-id': `req-${status}`, ...headers });
  res.end(JSON.stringify(body));
}

const CREATED = {
  success: true,
  id: '11111111-1111-4111-8111-111111111111',
  status: 'submitted',
  amount: 100,
  invoiceId: '22222222-2222-4222-8222-222222222222',
  invoiceIds: ['22222222-2222-4222-8222-222222222222'],
  qrpay: { qrText: '000201', qrImage: '', urls: [] },
};

describe('SDK retries (scripted server)', () => {
  let fake: FakeServer;
  beforeAll(async () => {
    fake = await fakeServer();
  });
  afterEach(() => {
    fake.calls.length = 0;
  });
  afterAll(() => fake.close());

  const sdk = (extra: Partial<Parameters<typeof createClient>[0]> = {}) => createClient({ baseUrl: fake.baseUrl, apiKey: 'gpk_sandbox_x', retryBaseMs: 5, ...extra });

  it('follows the feed: a full page is read on at once, a 503 is retried, a replayed event is skipped, and aborting ends it', async () => {
    const event = (sequence: number) => ({
      id: `00000000-0000-4000-8000-${String(sequence).padStart(12, '0')}`,
      type: 'payment.confirmed',
      createdAt: '2026-11-25T08:59:54.612Z',
      sequence,
      data: { id: '11111111-1111-4111-8111-111111111111', amount: 100 },
    });
    const stop = new AbortController();
    const pages: Record<number, () => unknown> = {
      1: () => ({ items: [event(3), event(7)], nextCursor: null }),
      2: () => null,
      3: () => ({ items: [event(7), event(9)], nextCursor: null }),
      4: () => {
        stop.abort();
        return { items: [], nextCursor: null };
      },
    };
    fake.respond((_req, _body, res) => {
      const page = pages[fake.calls.length]?.();
      if (page) json(res, 200, page);
      else json(res, 503, { statusCode: 503, message: 'Service Unavailable' });
    });
    const seen: number[] = [];
    for await (const e of sdk().events.follow({ afterSequence: 0, type: 'payment.confirmed', limit: 2, pollIntervalMs: 5, signal: stop.signal })) seen.push(e.sequence);
    expect(seen).toEqual([3, 7, 9]);
    const queries = fake.calls.map((c) => Object.fromEntries(new URL(c.url, 'http://x').searchParams));
    expect(queries).toEqual([
      { afterSequence: '0', type: 'payment.confirmed', limit: '2' },
      { afterSequence: '7', type: 'payment.confirmed', limit: '2' },
      { afterSequence: '7', type: 'payment.confirmed', limit: '2' },
      { afterSequence: '9', type: 'payment.confirmed', limit: '2' },
    ]);
  });

  it('retries 503 twice with the same idempotency key, then succeeds', async () => {
    fake.respond((_req, _body, res) => (fake.calls.length <= 2 ? json(res, 503, { statusCode: 503, message: 'Service Unavailable' }) : json(res, 201, CREATED)));
    const created = await sdk().payments.create({ invoiceId: CREATED.invoiceId, amount: 100 });
    expect(created.id).toBe(CREATED.id);
    expect(fake.calls).toHaveLength(3);
    const keys = fake.calls.map((c) => c.headers['x-idempotency-key']);
    expect(keys[0]).toMatch(UUID);
    expect(new Set(keys).size).toBe(1);
    expect(fake.calls.map((c) => JSON.parse(c.body) as unknown)).toEqual(Array(3).fill({ invoiceId: CREATED.invoiceId, amount: 100 }));
    expect(fake.calls.every((c) => c.method === 'POST' && c.url === '/api/v1/payments' && c.headers['x-api-key'] === 'gpk_sandbox_x')).toBe(true);
  });

  it('keeps a caller-supplied idempotency key across retries', async () => {
    fake.respond((_req, _body, res) => (fake.calls.length === 1 ? json(res, 502, {}) : json(res, 201, CREATED)));
    await sdk().payments.create({ invoiceId: CREATED.invoiceId }, { idempotencyKey: 'my-key-1' });
    expect(fake.calls.map((c) => c.headers['x-idempotency-key'])).toEqual(['my-key-1', 'my-key-1']);
  });

  it('honours Retry-After on 429, then succeeds', async () => {
    fake.respond((_req, _body, res) =>
      fake.calls.length === 1 ? json(res, 429, { statusCode: 429, message: 'Too Many Requests' }, { 'retry-after': '0' }) : json(res, 200, { total: 1, open: 1, overdue: 0, paid: 0, totalAmountDue: 5 }),
    );
    // A huge backoff base proves the wait came from Retry-After: 0, not from the backoff.
    const started = Date.now();
    const summary = await sdk({ retryBaseMs: 60_000 }).reports.summary();
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(summary.total).toBe(1);
    expect(fake.calls).toHaveLength(2);
  });

  it('waits the Retry-After seconds', async () => {
    fake.respond((_req, _body, res) => (fake.calls.length === 1 ? json(res, 429, {}, { 'retry-after': '1' }) : json(res, 200, { status: 'ok' })));
    const started = Date.now();
    await sdk({ retryBaseMs: 1 }).reports.summary();
    expect(Date.now() - started).toBeGreaterThanOrEqual(950);
  });

  it('gives up after the configured retries with a typed error', async () => {
    fake.respond((_req, _body, res) => json(res, 429, { statusCode: 429, message: 'Too Many Requests' }, { 'retry-after': '0' }));
    const err = await sdk({ retries: 2 }).payments.get(CREATED.id).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RateLimitError);
    expect((err as RateLimitError).retryAfter).toBe(0);
    expect((err as RateLimitError).requestId).toBe('req-429');
    expect(fake.calls).toHaveLength(3);

    fake.calls.length = 0;
    fake.respond((_req, _body, res) => json(res, 504, { statusCode: 504, message: 'Gateway Timeout' }));
    const server = await sdk({ retries: 1 }).invoices.search({ ttd: '1' }).catch((e: unknown) => e);
    expect(server).toBeInstanceOf(ServerError);
    expect((server as ServerError).status).toBe(504);
    expect(fake.calls).toHaveLength(2);
  });

  it('does not wait for a Retry-After longer than maxRetryDelayMs', async () => {
    fake.respond((_req, _body, res) => json(res, 429, {}, { 'retry-after': '3600' }));
    await expect(sdk({ maxRetryDelayMs: 1000 }).reports.summary()).rejects.toMatchObject({ name: 'RateLimitError', retryAfter: 3600 });
    expect(fake.calls).toHaveLength(1);
  });

  it('never retries other 4xx or 500', async () => {
    for (const status of [400, 401, 403, 404, 409, 422, 500]) {
      fake.calls.length = 0;
      fake.respond((_req, _body, res) => json(res, status, { statusCode: status, message: status === 400 ? ['bad'] : 'no' }));
      const err = await sdk().payments.create({ invoiceId: CREATED.invoiceId }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ApiError);
      expect((err as ApiError).status).toBe(status);
      expect(fake.calls).toHaveLength(1);
    }
  });

  it('retries network errors and timeouts of idempotent calls, then throws NetworkError', async () => {
    let attempts = 0;
    const refusing: FetchLike = () => {
      attempts++;
      return Promise.reject(new TypeError('fetch failed', { cause: new Error('connect ECONNREFUSED') }));
    };
    const err = await createClient({ baseUrl: fake.baseUrl, apiKey: 'k', fetch: refusing, retries: 2, retryBaseMs: 1 })
      .payments.create({ invoiceId: CREATED.invoiceId })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(NetworkError);
    expect((err as NetworkError).message).toContain('ECONNREFUSED');
    expect(attempts).toBe(3);

    fake.respond(() => undefined); // never answers
    const slow = await sdk({ timeoutMs: 100, retries: 1 }).payments.get(CREATED.id).catch((e: unknown) => e);
    expect(slow).toBeInstanceOf(NetworkError);
    expect((slow as NetworkError).timedOut).toBe(true);
    expect(fake.calls).toHaveLength(2);
  });

  it('does not retry a webhook registration after a network error, only after 429', async () => {
    let attempts = 0;
    const refusing: FetchLike = () => {
      attempts++;
      return Promise.reject(new TypeError('fetch failed'));
    };
    await expect(
      createClient({ baseUrl: fake.baseUrl, apiKey: 'k', fetch: refusing, retryBaseMs: 1 }).webhooks.create({ url: 'https://x.example/h', secret: 's', events: ['payment.confirmed'] }),
    ).rejects.toBeInstanceOf(NetworkError);
    expect(attempts).toBe(1);

    fake.respond((_req, _body, res) => json(res, 503, {}));
    await expect(sdk().webhooks.create({ url: 'https://x.example/h', secret: 's', events: ['payment.confirmed'] })).rejects.toBeInstanceOf(ServerError);
    expect(fake.calls).toHaveLength(1);
  });

  it('stops retrying when the caller aborts', async () => {
    fake.respond((_req, _body, res) => json(res, 503, {}));
    const controller = new AbortController();
    const creating = sdk({ retryBaseMs: 10_000 }).payments.create({ invoiceId: CREATED.invoiceId }, { signal: controller.signal });
    // Abort once the first attempt has reached the server: its 503 in flight or the 10 s backoff after it.
    await expect.poll(() => fake.calls.length).toBe(1);
    controller.abort(new Error('stop'));
    await expect(creating).rejects.toThrow('stop');
    expect(fake.calls).toHaveLength(1);
  });

  it('parses Retry-After seconds and HTTP dates', () => {
    expect(parseRetryAfter(null)).toBeUndefined();
    expect(parseRetryAfter('2')).toBe(2);
    expect(parseRetryAfter('soon')).toBeUndefined();
    const inTen = new Date(Date.now() + 10_000).toUTCString();
    expect(parseRetryAfter(inTen)).toBeGreaterThan(8);
  });
});

describe('SDK webhooks and devices methods (scripted server)', () => {
  let fake: FakeServer;
  let client: PaymentChannelClient;
  beforeAll(async () => {
    fake = await fakeServer();
    client = createClient({ baseUrl: `${fake.baseUrl}/`, apiKey: 'gpk_sandbox_y', retryBaseMs: 1 });
  });
  afterEach(() => {
    fake.calls.length = 0;
  });
  afterAll(() => fake.close());

  it('sends the documented requests and returns the bodies', async () => {
    const hook = { id: '33333333-3333-4333-8333-333333333333', url: 'https://partner.example/hook', events: ['payment.confirmed'], createdAt: '2025-01-01T00:00:00.000Z' };
    const attempt = { event: 'payment.confirmed', deliveryId: '55555555-5555-4555-8555-555555555555', status: 'succeeded', statusCode: 200, durationMs: 3, error: null, attempt: 1, nextRetryAt: null, createdAt: hook.createdAt };
    const device = { id: '44444444-4444-4444-8444-444444444444', platform: 'ios', createdAt: '2025-01-01T00:00:00.000Z' };
    fake.respond((req, _body, res) => {
      const route = `${req.method} ${req.url}`;
      if (route === 'POST /api/v1/webhooks') return json(res, 201, { ...hook, secret: 'shh' });
      if (route === 'GET /api/v1/webhooks') return json(res, 200, [hook]);
      if (route === `DELETE /api/v1/webhooks/${hook.id}`) return json(res, 200, { id: hook.id, deleted: true });
      if (route === `GET /api/v1/webhooks/${hook.id}/deliveries`) return json(res, 200, { items: [attempt] });
      if (route === 'POST /api/v1/devices') return json(res, 201, device);
      return json(res, 404, { statusCode: 404, message: 'no route' });
    });

    const created = await client.webhooks.create({ url: hook.url, secret: 'shh', events: ['payment.confirmed'] });
    expect(created).toMatchObject({ id: hook.id, secret: 'shh' });
    expect(await client.webhooks.list()).toEqual([hook]);
    expect(await client.webhooks.delete(hook.id)).toEqual({ id: hook.id, deleted: true });
    expect(await client.webhooks.deliveries(hook.id)).toEqual({ items: [attempt] });
    expect(await client.devices.register({ userId: 'user-1', fcmToken: 'tok', platform: 'ios' })).toEqual(device);

    expect(fake.calls.map((c) => `${c.method} ${c.url}`)).toEqual([
      'POST /api/v1/webhooks',
      'GET /api/v1/webhooks',
      `DELETE /api/v1/webhooks/${hook.id}`,
      `GET /api/v1/webhooks/${hook.id}/deliveries`,
      'POST /api/v1/devices',
    ]);
    expect(JSON.parse(fake.calls[0]?.body ?? '')).toEqual({ url: hook.url, secret: 'shh', events: ['payment.confirmed'] });
    expect(JSON.parse(fake.calls[4]?.body ?? '')).toEqual({ userId: 'user-1', fcmToken: 'tok', platform: 'ios' });
    expect(fake.calls.every((c) => c.headers['x-api-key'] === 'gpk_sandbox_y')).toBe(true);
    expect(fake.calls[0]?.headers['content-type']).toBe('application/json');
  });

  it('encodes path segments and query parameters', async () => {
    fake.respond((_req, _body, res) => json(res, 200, { invoices: [], total: 0 }));
    await client.invoices.search({ vehicle: '1234УБА' });
    await client.invoices.byRef('A/B ?');
    await client.reports.payments({ limit: 5 });
    await client.cases.list({ status: 'in_progress', limit: 5 });
    await client.cases.comment('a/b', 'note');
    expect(fake.calls.map((c) => c.url)).toEqual([
      `/api/v1/invoices?vehicle=${encodeURIComponent('1234УБА')}`,
      '/api/v1/invoices/ref/A%2FB%20%3F',
      '/api/v1/reports/payments?limit=5',
      '/api/v1/cases?status=in_progress&limit=5',
      '/api/v1/cases/a%2Fb/comments',
    ]);
    expect(JSON.parse(fake.calls[4]?.body ?? '')).toEqual({ text: 'note' });
    expect(fake.calls[0]?.headers['x-idempotency-key']).toBeUndefined();
  });

  it('resolves health.ready on 503 without retrying', async () => {
    fake.respond((_req, _body, res) => json(res, 503, { status: 'unavailable', db: 'down', timestamp: '2025-01-01T00:00:00.000Z' }));
    expect(await client.health.ready()).toMatchObject({ status: 'unavailable', db: 'down' });
    expect(fake.calls).toHaveLength(1);
    expect(fake.calls[0]?.headers['x-api-key']).toBeUndefined();
  });
});

describe('verifyWebhook', () => {
  const secret = 'whsec_test_0123456789abcdef';
  const body = JSON.stringify({ event: 'payment.confirmed', deliveryId: 'd-1', createdAt: '2025-01-01T00:00:00.000Z', data: { id: CREATED.id, amount: 12000.5 } });
  const sign = (b: string | Buffer, s = secret) => createHmac('sha256', s).update(b).digest('hex');

  it('accepts the lowercase hex HMAC-SHA256 of the exact body, as string or Buffer', () => {
    expect(verifyWebhook(body, sign(body), secret)).toBe(true);
    expect(verifyWebhook(Buffer.from(body, 'utf8'), sign(body), secret)).toBe(true);
    const mongolian = JSON.stringify({ event: 'payment.submitted', data: { note: 'Төлбөр' } });
    expect(verifyWebhook(Buffer.from(mongolian), sign(mongolian), secret)).toBe(true);
  });

  it('rejects wrong secrets, altered bodies and missing or malformed signatures', () => {
    const good = sign(body);
    expect(verifyWebhook(body, sign(body, 'another-secret'), secret)).toBe(false);
    expect(verifyWebhook(body.replace('12000.5', '12000.6'), good, secret)).toBe(false);
    expect(verifyWebhook(JSON.stringify(JSON.parse(body), null, 2), good, secret)).toBe(false);
    expect(verifyWebhook(body, undefined, secret)).toBe(false);
    expect(verifyWebhook(body, '', secret)).toBe(false);
    expect(verifyWebhook(body, good.slice(0, 62), secret)).toBe(false);
    expect(verifyWebhook(body, `${good}00`, secret)).toBe(false);
    expect(verifyWebhook(body, `sha256=${good}`, secret)).toBe(false);
    expect(verifyWebhook(body, 'z'.repeat(64), secret)).toBe(false);
    expect(verifyWebhook(body, good, '')).toBe(false);
  });

  it('parseWebhook verifies, then returns the typed message', () => {
    const message = parseWebhook(body, sign(body), secret);
    expect(message.event).toBe('payment.confirmed');
    if (message.event === 'payment.confirmed') expect(message.data.amount).toBe(12000.5);
    expect(() => parseWebhook(body, sign('other'), secret)).toThrow(WebhookVerificationError);
  });
});

describe('error codes in the SDK', () => {
  it('types the code of an error body, takes the request id from the body when the header is missing, and the refused fields of a 400', () => {
    const bad = errorFromResponse(
      400,
      { statusCode: 400, message: ['amount must be of type number'], error: 'Bad Request', code: 'invalid_request', requestId: 'r-body', errors: [{ path: '/amount', message: 'amount must be of type number' }] },
      undefined,
      undefined,
    );
    expect(bad).toBeInstanceOf(BadRequestError);
    expect(bad).toMatchObject({ code: 'invalid_request', requestId: 'r-body', errors: [{ path: '/amount', message: 'amount must be of type number' }] });
    const refused = errorFromResponse(422, { success: false, refNum: 'MOF-T-1', message: 'Invoice is already paid', code: 'invoice_not_payable', requestId: 'r-body' }, 'r-header', undefined);
    expect(refused).toBeInstanceOf(PaymentFailedError);
    expect(refused).toMatchObject({ code: 'invoice_not_payable', requestId: 'r-header' });
    const code: ErrorCode | undefined = refused.code;
    expect(ERROR_CODES).toContain(code);
    // A body that is not the service's (a proxy's) has no code, and an unknown one is not passed off as one.
    expect(errorFromResponse(502, '<html>Bad gateway</html>', undefined, undefined).code).toBeUndefined();
    expect(errorFromResponse(409, { statusCode: 409, message: 'x', error: 'Conflict', code: 'made_up' }, 'r', undefined).code).toBeUndefined();
    // The open case's id comes with case_already_open; another 409, or one without the id, is a plain ConflictError.
    const caseId = '66666666-6666-4666-8666-666666666666';
    const open = errorFromResponse(409, { statusCode: 409, message: 'x', error: 'Conflict', code: 'case_already_open', requestId: 'r-body', caseId }, undefined, undefined);
    expect(open).toBeInstanceOf(CaseAlreadyOpenError);
    expect(open).toMatchObject({ name: 'CaseAlreadyOpenError', code: 'case_already_open', caseId, requestId: 'r-body' });
    for (const body of [{ code: 'case_already_open' }, { code: 'illegal_transition', caseId }]) {
      const other = errorFromResponse(409, { statusCode: 409, message: 'x', error: 'Conflict', ...body }, 'r', undefined);
      expect(other).toBeInstanceOf(ConflictError);
      expect(other).not.toBeInstanceOf(CaseAlreadyOpenError);
    }
  });
});
