import type { LightMyRequestResponse } from 'fastify';
import type { Static } from 'typebox';
import { expect } from 'vitest';
import type { InvoiceBody, InvoiceListBody } from '../../src/schemas/invoice.schema.js';
import type {
  PaymentBody,
  PaymentCreatedBody,
  PaymentFailedBody,
  PaymentListBody,
  SettlementBody,
  SummaryBody,
} from '../../src/schemas/payment.schema.js';
import type { DeliveryListBody } from '../../src/schemas/webhook.schema.js';
import type { InvoiceFixture } from '../../simulator/fixtures.schema.js';
import { addOwnInvoice } from './own-invoice.js';
import type { TestContext } from './test-context.js';

/*
 * The partner API's requests as the tests send them, and its answers typed from the route schemas
 * (so a response type cannot drift from what the service documents).
 */

export type Invoice = Static<typeof InvoiceBody>;
export type InvoiceList = Static<typeof InvoiceListBody>;
export type PaymentCreated = Static<typeof PaymentCreatedBody>;
export type PaymentFailed = Static<typeof PaymentFailedBody>;
export type Payment = Static<typeof PaymentBody>;
export type PaymentList = Static<typeof PaymentListBody>;
export type Settlement = Static<typeof SettlementBody>;
export type Summary = Static<typeof SummaryBody>;
/** One entry of GET /webhooks/{id}/deliveries. */
export type DeliveryAttempt = Static<typeof DeliveryListBody>['items'][number];

export interface Partner {
  id: string;
  apiKey: string;
}

type Source = InvoiceFixture['source'];

/** POST /payments. */
export function pay(ctx: TestContext, apiKey: string, payload: unknown, headers: Record<string, string> = {}): Promise<LightMyRequestResponse> {
  return ctx.api(apiKey, { method: 'POST', url: '/api/v1/payments', payload: payload as object, headers });
}

/** GET /payments/{id}. */
export function getPayment(ctx: TestContext, apiKey: string, id: string): Promise<LightMyRequestResponse> {
  return ctx.api(apiKey, { method: 'GET', url: `/api/v1/payments/${id}` });
}

/** DELETE /payments/{id}. */
export function cancelPayment(ctx: TestContext, apiKey: string, id: string): Promise<LightMyRequestResponse> {
  return ctx.api(apiKey, { method: 'DELETE', url: `/api/v1/payments/${id}` });
}

/** GET /invoices/{id}: the partner's stored copy. */
export async function getInvoice(ctx: TestContext, apiKey: string, id: string): Promise<Invoice> {
  const res = await ctx.api(apiKey, { method: 'GET', url: `/api/v1/invoices/${id}` });
  expect(res.statusCode, res.body).toBe(200);
  return res.json<Invoice>();
}

/** GET /invoices/ref/{refNum}: the live lookup that also records the invoice as retrieved by the partner. */
export async function lookupRef(ctx: TestContext, apiKey: string, refNum: string): Promise<Invoice> {
  const res = await ctx.api(apiKey, { method: 'GET', url: `/api/v1/invoices/ref/${encodeURIComponent(refNum)}` });
  expect(res.statusCode, res.body).toBe(200);
  return res.json<Invoice>();
}

/** GET /invoices?{query}. */
export async function searchInvoices(ctx: TestContext, apiKey: string, query: string): Promise<InvoiceList> {
  const res = await ctx.api(apiKey, { method: 'GET', url: `/api/v1/invoices?${query}` });
  expect(res.statusCode, res.body).toBe(200);
  return res.json<InvoiceList>();
}

/** GET /reports/summary. */
export async function summary(ctx: TestContext, apiKey: string): Promise<Summary> {
  const res = await ctx.api(apiKey, { method: 'GET', url: '/api/v1/reports/summary' });
  expect(res.statusCode, res.body).toBe(200);
  return res.json<Summary>();
}

/** POST /__control/approve at the simulator: the citizen paid. */
export function approve(ctx: TestContext, refNum: string): Promise<LightMyRequestResponse> {
  return ctx.sim('/__control/approve', { refNum });
}

/** The invoice as its ministry shows it (status and balance); null when the ministry does not know it. */
export async function atMinistry(ctx: TestContext, source: Source, refNum: string): Promise<{ status: string; amount: string } | null> {
  const invoice = await ctx.deps.ministries[source].getByRef(refNum);
  return invoice && { status: invoice.status, amount: invoice.amount };
}

/** The simulated ministry's approval of the invoice's submitted payment, then the confirmation job's pass that picks it up. */
export async function approveAndConfirm(ctx: TestContext, refNum: string): Promise<void> {
  expect((await approve(ctx, refNum)).statusCode).toBe(200);
  ctx.advance(ctx.config.confirmPollMs + 1000);
  await ctx.runJobs();
}

/** An answer's X-Request-Id, which its error body names as `requestId`. */
export const requestIdOf = (res: { headers: Record<string, unknown> }): string => res.headers['x-request-id'] as string;

/** The exact 400 body refusing each `[path, message]`, with the answer's own request id. */
export const badRequest = (res: { headers: Record<string, unknown> }, ...fields: [path: string, message: string][]) => ({
  statusCode: 400,
  message: fields.map(([, message]) => message),
  error: 'Bad Request',
  code: 'invalid_request',
  requestId: requestIdOf(res),
  errors: fields.map(([path, message]) => ({ path, message })),
});

/** Pays and expects the 201; the created payment. */
export async function payOk(ctx: TestContext, apiKey: string, payload: unknown, headers: Record<string, string> = {}): Promise<PaymentCreated> {
  const res = await pay(ctx, apiKey, payload, headers);
  expect(res.statusCode, res.body).toBe(201);
  return res.json<PaymentCreated>();
}

/*
 * Per-test fixtures: each test makes the partner, invoice and payment it needs, so nothing it
 * asserts depends on what another test paid, canceled or left behind.
 */

export interface OwnInvoice {
  /** The service's id of the invoice, as the partner that retrieved it sees it. */
  id: string;
  refNum: string;
  fixture: InvoiceFixture;
}

/** An invoice only this test knows (see addOwnInvoice), retrieved by `partner` so it may pay it. */
export async function ownInvoice(ctx: TestContext, partner: Partner, source: Source, extra: Partial<InvoiceFixture> = {}): Promise<OwnInvoice> {
  const fixture = await addOwnInvoice(ctx, source, extra);
  const { id } = await lookupRef(ctx, partner.apiKey, fixture.refNum);
  return { id, refNum: fixture.refNum, fixture };
}

/** A fresh partner and an invoice of the test's own that it has retrieved. */
export async function partnerWithInvoice(
  ctx: TestContext,
  source: Source,
  extra: Partial<InvoiceFixture> = {},
  partnerOpts: Parameters<TestContext['partner']>[0] = {},
): Promise<{ partner: Partner; invoice: OwnInvoice }> {
  const partner = await ctx.partner(partnerOpts);
  return { partner, invoice: await ownInvoice(ctx, partner, source, extra) };
}

/** A fresh partner, an invoice of the test's own, and the partner's submitted payment of it. */
export async function partnerWithPayment(
  ctx: TestContext,
  source: Source,
  extra: Partial<InvoiceFixture> = {},
): Promise<{ partner: Partner; invoice: OwnInvoice; payment: PaymentCreated }> {
  const { partner, invoice } = await partnerWithInvoice(ctx, source, extra);
  const payment = await payOk(ctx, partner.apiKey, { invoiceId: invoice.id });
  expect(payment.status).toBe('submitted');
  return { partner, invoice, payment };
}
