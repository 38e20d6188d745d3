import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestContext, type TestContext } from '../helpers/test-context.js';
import { approve, getPayment, ownInvoice, payOk, type Partner, type Payment } from '../helpers/api.js';
import { unique } from '../helpers/own-invoice.js';

/** A local stand-in for FCM HTTP v1: records every message; answers with the scripted statuses, then 200. */
function fakeFcm() {
  const received: { token: string; authorization: string; data: Record<string, string> }[] = [];
  const script: number[] = [];
  const server: Server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      const { message } = JSON.parse(body) as { message: { token: string; data: Record<string, string> } };
      received.push({ token: message.token, authorization: req.headers.authorization ?? '', data: message.data });
      const status = script.shift() ?? 200;
      res.writeHead(status, { 'content-type': 'application/json' }).end(status === 200 ? '{"name":"projects/demo/messages/1"}' : '{"error":{}}');
    });
  });
  return { server, received, script };
}

const fcm = fakeFcm();
let ctx: TestContext;

beforeAll(async () => {
  await new Promise<void>((resolve) => fcm.server.listen(0, '127.0.0.1', resolve));
  const endpoint = `http://127.0.0.1:${(fcm.server.address() as AddressInfo).port}`;
  ctx = await createTestContext({ config: { fcm: { projectId: 'demo-project', accessToken: 'fake-access-token', endpoint }, webhookRetryScheduleMs: [0, 1000] } });
});
afterAll(async () => {
  await ctx?.close();
  await new Promise<void>((resolve) => fcm.server.close(() => resolve()));
});

async function device(partner: Partner, userId: string): Promise<string> {
  const fcmToken = unique('fcm-token');
  const res = await ctx.api(partner.apiKey, { method: 'POST', url: '/api/v1/devices', payload: { userId, fcmToken, platform: 'android' } });
  expect(res.statusCode, res.body).toBe(201);
  return fcmToken;
}

/** A payment of the partner's own invoice, made with these headers, approved and confirmed by a job pass. */
async function confirmedPayment(partner: Partner, headers: Record<string, string>): Promise<string> {
  const invoice = await ownInvoice(ctx, partner, 'mof');
  const payment = await payOk(ctx, partner.apiKey, { invoiceId: invoice.id }, headers);
  await approve(ctx, invoice.refNum);
  await ctx.runJobs();
  expect((await getPayment(ctx, partner.apiKey, payment.id)).json<Payment>().status).toBe('confirmed');
  return payment.id;
}

const tokensFor = (paymentId: string) => fcm.received.filter((m) => m.data.paymentId === paymentId).map((m) => m.token).sort();

describe('push to the end user when a payment is confirmed', () => {
  it("reaches each of the user's devices once, and never another partner's or another user's", async () => {
    const bank = await ctx.partner();
    const other = await ctx.partner();
    const userId = unique('user');
    const mine = [await device(bank, userId), await device(bank, userId)];
    await device(bank, unique('someone-else'));
    await device(other, userId);

    const paymentId = await confirmedPayment(bank, { 'x-user-id': userId });
    await ctx.runJobs();
    expect(tokensFor(paymentId)).toEqual(mine.sort());
    const sent = fcm.received.filter((m) => m.data.paymentId === paymentId);
    expect(sent.every((m) => m.authorization === 'Bearer fake-access-token' && m.data.event === 'payment.confirmed')).toBe(true);
  });

  it('pushes nothing for a payment made without X-User-Id', async () => {
    const bank = await ctx.partner();
    await device(bank, unique('user'));
    const before = fcm.received.length;
    const paymentId = await confirmedPayment(bank, {});
    await ctx.runJobs();
    expect(tokensFor(paymentId)).toEqual([]);
    expect(fcm.received.length).toBe(before);
  });

  it('retries a push FCM refused on the webhook schedule, without holding back the confirmation', async () => {
    const bank = await ctx.partner();
    const userId = unique('user');
    const token = await device(bank, userId);
    fcm.script.push(503);
    const paymentId = await confirmedPayment(bank, { 'x-user-id': userId });
    expect(tokensFor(paymentId)).toEqual([token]);
    ctx.advance(1500);
    await ctx.runJobs();
    expect(tokensFor(paymentId)).toEqual([token, token]);
    ctx.advance(10_000);
    await ctx.runJobs();
    expect(tokensFor(paymentId)).toEqual([token, token]);
  });

  it('treats another X-User-Id under the same idempotency key as another request', async () => {
    const bank = await ctx.partner();
    const invoice = await ownInvoice(ctx, bank, 'mof');
    const headers = { 'x-idempotency-key': unique('idem'), 'x-user-id': 'user-a' };
    await payOk(ctx, bank.apiKey, { invoiceId: invoice.id }, headers);
    const again = await ctx.api(bank.apiKey, { method: 'POST', url: '/api/v1/payments', payload: { invoiceId: invoice.id }, headers: { ...headers, 'x-user-id': 'user-b' } });
    expect(again.statusCode).toBe(422);
    const replay = await ctx.api(bank.apiKey, { method: 'POST', url: '/api/v1/payments', payload: { invoiceId: invoice.id }, headers });
    expect(replay.statusCode).toBe(201);
    expect(replay.headers['idempotent-replayed']).toBe('true');
  });

  it('refuses an X-User-Id that is not printable ASCII', async () => {
    const bank = await ctx.partner();
    const invoice = await ownInvoice(ctx, bank, 'mof');
    const res = await ctx.api(bank.apiKey, { method: 'POST', url: '/api/v1/payments', payload: { invoiceId: invoice.id }, headers: { 'x-user-id': 'a b' } });
    expect(res.statusCode).toBe(400);
  });
});
