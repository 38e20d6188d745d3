import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestContext, type TestContext } from '../helpers/test-context.js';
import { decodeQrImage } from '../helpers/qr-decode.js';
import { approve, approveAndConfirm, cancelPayment, getPayment, pay, partnerWithInvoice, partnerWithPayment, type PaymentCreated } from '../helpers/api.js';
import { pageScript } from '../../src/http/page-script.bundler.js';
import { hashOf } from '../../src/http/plugins/page-security.plugin.js';

/*
 * The QR landing page behind qrpay.shortUrl: GET /q/{paymentId} (HTML, no API key) and the status
 * it polls, GET /q/{paymentId}/status. Each test makes its own partner, invoice and payment.
 */

let ctx: TestContext;

beforeAll(async () => {
  ctx = await createTestContext();
});
afterAll(() => ctx.close());

/** Requests exactly as a phone would: no API key, nothing else. */
const open = (url: string, method: 'GET' | 'HEAD' = 'GET') => ctx.app.inject({ method, url });
const page = (id: string) => open(`/q/${id}`);
const status = async (id: string) => {
  const res = await open(`/q/${id}/status`);
  expect(res.statusCode, res.body).toBe(200);
  return res;
};

/** The page's path as the short URL names it (whatever SHORT_URL_BASE's host). */
const pathOf = (payment: PaymentCreated) => new URL(payment.qrpay?.shortUrl ?? '').pathname;

const decodeEntities = (html: string) =>
  html.replace(/&quot;/g, '"').replace(/&#39;/g, "'").replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&amp;/g, '&');

function expectHtmlHeaders(res: LightMyRequestResponse): void {
  expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
  expect(res.headers['cache-control']).toBe('no-store');
  expect(res.headers['x-frame-options']).toBe('DENY');
  expect(res.headers['referrer-policy']).toBe('no-referrer');
  expect(res.headers['x-content-type-options']).toBe('nosniff');
  const csp = String(res.headers['content-security-policy']);
  expect(csp).toContain("default-src 'none'");
  expect(csp).toContain("frame-ancestors 'none'");
  // Nothing from any other host, and no blanket inline permission: the page's own script and style by hash.
  expect(csp).not.toMatch(/https?:|\*|unsafe-inline|unsafe-eval/);
  // Never rate-limited or keyed like the API.
  expect(res.headers.ratelimit).toBeUndefined();
}

function expectNotFoundPage(res: LightMyRequestResponse): void {
  expect(res.statusCode, res.body).toBe(404);
  expectHtmlHeaders(res);
  expect(res.body).toMatch(/^<!doctype html>/i);
  expect(res.body).toContain('Payment not found');
}

/** The QR images the page carries, as base64 PNGs. */
function qrImagesOf(html: string): string[] {
  return [...html.matchAll(/<img[^>]*src="data:image\/png;base64,([A-Za-z0-9+/=]+)"/g)].map((m) => m[1] ?? '');
}

/** The page's links (bank deeplinks), decoded from HTML. */
/** The bank apps' deeplinks the page offers (the receipt's link is not one). */
function linksOf(html: string): string[] {
  return [...html.matchAll(/<a class="bank" [^>]*href="([^"]*)"/g)].map((m) => decodeEntities(m[1] ?? ''));
}

/** The text of the element with this id, its entities decoded. */
function textOf(html: string, id: string): string | undefined {
  const m = new RegExp(`id="${id}">([^<]*)<`).exec(html);
  return m ? decodeEntities(m[1] ?? '') : undefined;
}

describe('QR landing page', () => {
  it('shows amount, payee, description, the same QR and the same bank links as the POST /payments answer', async () => {
    const { invoice, payment } = await partnerWithPayment(ctx, 'mof', { amount: 1234567.5, description: 'Торгууль <б> & "хураамж"' });
    const qrpay = payment.qrpay;
    if (!qrpay?.shortUrl) throw new Error('no shortUrl in the POST answer');
    expect(pathOf(payment)).toBe(`/q/${payment.id}`);

    const res = await open(pathOf(payment));
    expect(res.statusCode, res.body).toBe(200);
    expectHtmlHeaders(res);
    const html = res.body;
    expect(html).toContain('data-status="submitted"');
    expect(html).toContain('1,234,567.50\u00a0₮');
    expect(html).toContain(invoice.fixture.payee.name);
    // The description is escaped, never markup.
    expect(html).toContain('Торгууль &lt;б&gt; &amp; &quot;хураамж&quot;');
    expect(html).not.toContain('<б>');

    const images = qrImagesOf(html);
    expect(images).toHaveLength(1);
    expect(images[0]).toBe(qrpay.qrImage);
    expect(decodeQrImage(images[0] ?? '')).toBe(qrpay.qrText);
    expect(linksOf(html)).toEqual(qrpay.urls.map((u) => u.link));
    for (const u of qrpay.urls) expect(html).toContain(u.description);

    // Nothing from another host: no http(s) URL at all (bank logos are letter badges), no external src/href.
    expect(html).not.toMatch(/https?:\/\//);
    expect(html).not.toMatch(/\s(?:src|href)="\/\//);

    // HEAD answers too (link previews), without a body.
    const head = await open(pathOf(payment), 'HEAD');
    expect(head.statusCode).toBe(200);
    expect(head.body).toBe('');
  });

  it('carries its bundled script inline, allowed by its hash and nothing else', async () => {
    const { payment } = await partnerWithPayment(ctx, 'mof');
    const res = await page(payment.id);
    expect(res.statusCode, res.body).toBe(200);
    const scripts = [...res.body.matchAll(/<script\b([^>]*)>([\s\S]*?)<\/script>/g)];
    expect(scripts.map((m) => m[1])).toEqual(['']);
    const code = scripts[0]?.[2] ?? '';
    expect(code).toBe((await pageScript('short-link')).code);
    const policy = String(res.headers['content-security-policy']).split('; ');
    expect(policy).toContain(`script-src ${hashOf(code)}`);
    expect(policy).toContain("connect-src 'self'");
  });

  it('never exposes payer, partner or invoice identity in the page or the status', async () => {
    const payerName = 'Батболд Дорж';
    const { partner, invoice, payment } = await partnerWithPayment(ctx, 'etax', { payer: { register: 'УБ99887766', name: payerName } });
    const html = (await page(payment.id)).body;
    const statusRes = await status(payment.id);
    expect(statusRes.json()).toEqual({ status: 'submitted' });
    expect(Object.keys(statusRes.json<object>())).toEqual(['status']);
    expect(statusRes.headers['cache-control']).toBe('no-store');
    for (const text of [html, statusRes.body]) {
      for (const secret of [payerName, 'УБ99887766', partner.id, partner.apiKey, invoice.id, invoice.refNum]) {
        expect(text).not.toContain(secret);
      }
      expect(text).not.toMatch(/payer|partner|invoiceId|refNum|ref_num/i);
    }
    // What the QR itself carries has no payer either.
    const qrText = decodeQrImage(qrImagesOf(html)[0] ?? '') ?? '';
    expect(qrText).not.toContain(payerName);
    expect(qrText).not.toContain('УБ99887766');
  });

  it('flips to confirmed once the ministry approves and a confirmation pass runs; the paid page carries no QR', async () => {
    const { invoice, payment } = await partnerWithPayment(ctx, 'mof');
    expect((await status(payment.id)).json()).toEqual({ status: 'submitted' });

    expect((await approve(ctx, invoice.refNum)).statusCode).toBe(200);
    // The page only reads: the approval shows once the job (not the page) has confirmed it.
    expect((await status(payment.id)).json()).toEqual({ status: 'submitted' });
    await ctx.runJobs();
    expect((await status(payment.id)).json()).toEqual({ status: 'confirmed' });

    const res = await page(payment.id);
    expect(res.statusCode).toBe(200);
    expect(res.body).toContain('data-status="confirmed"');
    expect(qrImagesOf(res.body)).toEqual([]);
    expect(linksOf(res.body)).toEqual([]);
  });

  it('shows canceled, failed and expired payments as no longer payable, without a QR', async () => {
    const canceled = await partnerWithPayment(ctx, 'police');
    expect((await cancelPayment(ctx, canceled.partner.apiKey, canceled.payment.id)).statusCode).toBe(200);

    const failed = await partnerWithPayment(ctx, 'etax');
    expect((await ctx.sim('/__control/payments/outcome', { refNum: failed.invoice.refNum, outcome: 'rejected' })).statusCode).toBe(200);

    const expired = await partnerWithPayment(ctx, 'mof');
    await ctx.runJobs();
    ctx.advance(ctx.config.paymentExpiryMs + 1);
    await ctx.runJobs();

    for (const [{ payment }, expected] of [
      [canceled, 'canceled'],
      [failed, 'failed'],
      [expired, 'expired'],
    ] as const) {
      expect((await status(payment.id)).json()).toEqual({ status: expected });
      const res = await page(payment.id);
      expect(res.statusCode).toBe(200);
      expect(res.body).toContain(`data-status="${expected}"`);
      expect(res.body).toContain('No longer payable');
      expect(qrImagesOf(res.body)).toEqual([]);
      expect(linksOf(res.body)).toEqual([]);
    }
  });

  it('shows a payment still pending at the ministry as being prepared, its QR not yet offered', async () => {
    const { partner, invoice } = await partnerWithInvoice(ctx, 'etax');
    await ctx.sim('/__control/faults', { source: 'etax', mode: 'error' });
    try {
      expect((await pay(ctx, partner.apiKey, { invoiceId: invoice.id })).statusCode).toBe(503);
    } finally {
      await ctx.sim('/__control/faults', { source: 'etax', mode: 'none' });
    }
    const pending = await ctx.deps.db.selectFrom('payments').select(['id', 'status']).where('invoice_id', '=', invoice.id).executeTakeFirstOrThrow();
    expect(pending.status).toBe('pending');
    expect((await status(pending.id)).json()).toEqual({ status: 'pending' });
    const res = await page(pending.id);
    expect(res.statusCode).toBe(200);
    // The page shows "preparing"; its stylesheet keeps the QR and bank buttons hidden until the poll reads submitted.
    expect(res.body).toContain('data-status="pending"');
    expect(res.body).toMatch(/body\[data-status="submitted"\] #pay \{ display: flex; \}/);
  });

  it('answers an unknown or malformed id with the 404 page (HTML, not JSON), and its status with a 404', async () => {
    const unknown = '3f0c2a9e-8d7b-4c1e-9f3a-5b6d7e8f9a0b';
    for (const path of [
      `/q/${unknown}`,
      `/q/${unknown.toUpperCase()}`,
      '/q/not-a-uuid',
      '/q/%3Cscript%3Ealert(1)%3C%2Fscript%3E',
      '/q/%00',
      `/q/${'a'.repeat(150)}`,
      `/q/${unknown}/extra/segments`,
      '/q',
      '/q/',
    ]) {
      const res = await open(path);
      expectNotFoundPage(res);
      expect(res.body).not.toContain('<script>alert');
    }
    for (const id of [unknown, 'not-a-uuid', '%00']) {
      const res = await open(`/q/${id}/status`);
      expect(res.statusCode).toBe(404);
      expect(res.headers['content-type']).toContain('application/json');
      expect(res.json()).toMatchObject({ statusCode: 404 });
    }
    // The API's own unknown routes are unchanged (JSON).
    const api = await open('/api/v1/nothing-here');
    expect(api.statusCode).toBe(404);
    expect(api.headers['content-type']).toContain('application/json');
  });
});

describe('A confirmed payment on its landing page, and its receipt', () => {
  /** Mongolian time, as the customer's clock shows it (UTC+8, no daylight saving). */
  const mongolian = (iso: string) => new Date(new Date(iso).getTime() + 8 * 3600_000).toISOString().slice(0, 16).replace('T', ' ');

  async function confirmedWith(reference?: string) {
    const register = 'УБ99887766';
    const { partner, invoice } = await partnerWithInvoice(ctx, 'etax', { amount: 45000, description: 'Үл хөдлөх хөрөнгийн татвар', payer: { register, name: 'Батболд Дорж' } });
    const res = await pay(ctx, partner.apiKey, { invoiceId: invoice.id }, reference ? { 'x-partner-reference': reference } : {});
    expect(res.statusCode, res.body).toBe(201);
    const payment = res.json<PaymentCreated>();
    await approveAndConfirm(ctx, invoice.refNum);
    const read = await getPayment(ctx, partner.apiKey, payment.id);
    const body = read.json<{ status: string; paidAt?: string }>();
    expect(body.status).toBe('confirmed');
    if (!body.paidAt) throw new Error('a confirmed payment without paidAt');
    return { payment, invoice, paidAt: body.paidAt, register };
  }

  it('shows when it was paid, the amount, the payee, the payment id and the bank reference, with a link to the receipt', async () => {
    const { payment, invoice, paidAt } = await confirmedWith('BANK-TXN-8841');
    const res = await page(payment.id);
    expect(res.statusCode).toBe(200);
    expect(textOf(res.body, 'paid-at')).toBe(mongolian(paidAt));
    expect(textOf(res.body, 'paid-amount')).toBe('45,000\u00a0₮');
    expect(textOf(res.body, 'paid-payee')).toBe(invoice.fixture.payee.name);
    expect(textOf(res.body, 'payment-id')).toBe(payment.id);
    expect(textOf(res.body, 'bank-reference')).toBe('BANK-TXN-8841');
    expect(res.body).toContain('Төлбөрийн баримт');
    expect(res.body).toContain(`href="${payment.id}/receipt"`);
    // Still nothing of the payer on the page itself.
    expect(res.body).not.toContain('УБ99887766');
  });

  it('leaves the bank reference out when the bank gave none, and shows no receipt facts before the payment is confirmed', async () => {
    const { payment } = await confirmedWith();
    const res = await page(payment.id);
    expect(textOf(res.body, 'payment-id')).toBe(payment.id);
    expect(textOf(res.body, 'bank-reference')).toBeUndefined();

    const submitted = await partnerWithPayment(ctx, 'mof');
    const open = await page(submitted.payment.id);
    expect(textOf(open.body, 'paid-at')).toBeUndefined();
    expectNotFoundPage(await page(`${submitted.payment.id}/receipt`));
  });

  it('prints a receipt of a confirmed payment with the payer register masked', async () => {
    const { payment, invoice, paidAt, register } = await confirmedWith('BANK-TXN-9002');
    const res = await page(`${payment.id}/receipt`);
    expect(res.statusCode, res.body).toBe(200);
    expectHtmlHeaders(res);
    expect(res.body).toContain('@page { size: A4;');
    expect(textOf(res.body, 'amount')).toBe('45,000\u00a0₮');
    expect(textOf(res.body, 'paid-at')).toBe(mongolian(paidAt));
    expect(textOf(res.body, 'payee')).toBe(invoice.fixture.payee.name);
    expect(textOf(res.body, 'description')).toBe('Үл хөдлөх хөрөнгийн татвар');
    expect(textOf(res.body, 'payment-id')).toBe(payment.id);
    expect(textOf(res.body, 'bank-reference')).toBe('BANK-TXN-9002');
    expect(textOf(res.body, 'payer-register')).toBe('УБ******66');
    expect(res.body).not.toContain(register);
    expect(res.body).not.toContain('Батболд');
    // Both languages.
    expect(res.body).toContain('Төлбөрийн баримт');
    expect(res.body).toContain('Payment receipt');
  });

  it('answers the receipt of an unknown or malformed id, or of a canceled payment, with the 404 page', async () => {
    expectNotFoundPage(await page('6b1f8f0e-4f7c-4d5e-9a51-2f3b9c1d7e20/receipt'));
    expectNotFoundPage(await page('not-a-payment/receipt'));
    const canceled = await partnerWithPayment(ctx, 'police');
    expect((await cancelPayment(ctx, canceled.partner.apiKey, canceled.payment.id)).statusCode).toBe(200);
    expectNotFoundPage(await page(`${canceled.payment.id}/receipt`));
  });
});

describe('SHORT_URL_BASE elsewhere', () => {
  let other: TestContext;
  beforeAll(async () => {
    other = await createTestContext({ config: { shortUrlBase: 'https://pay.example.mn/pay/q' } });
  });
  afterAll(() => other?.close());

  it('names the configured base in qrpay.shortUrl while the page is still served at /q', async () => {
    const { payment } = await partnerWithPayment(other, 'mof');
    expect(payment.qrpay?.shortUrl).toBe(`https://pay.example.mn/pay/q/${payment.id}`);
    const res = await other.app.inject({ method: 'GET', url: `/q/${payment.id}` });
    expect(res.statusCode).toBe(200);
    expect(qrImagesOf(res.body)[0]).toBe(payment.qrpay?.qrImage);
  });
});
