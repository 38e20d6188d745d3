import { existsSync, mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { PNG } from 'pngjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { ARTIFACTS, CHROMIUM, launchChromium, listen } from '../helpers/browser.js';
import { createTestContext, type TestContext } from '../helpers/test-context.js';
import { approve, cancelPayment, partnerWithPayment } from '../helpers/api.js';

// jsqr's typings describe a CommonJS default export that NodeNext cannot call as an ESM default.
const jsQR = createRequire(import.meta.url)('jsqr') as typeof import('jsqr').default;


interface Opened {
  page: Page;
  /** Requests for anything outside the service (refused): must stay empty. */
  external: string[];
  /** Script errors and console errors (a CSP violation is one). */
  errors: string[];
}

/** A phone-sized page (390 x 844) that may only talk to the service under test. */
async function openPhone(browser: Browser, baseUrl: string, path: string, status = 200): Promise<Opened> {
  const page = await browser.newPage({ viewport: { width: 390, height: 844 }, deviceScaleFactor: 2, isMobile: true, hasTouch: true });
  const external: string[] = [];
  const errors: string[] = [];
  await page.route('**/*', (route) => {
    const url = route.request().url();
    if (url.startsWith(baseUrl) || url.startsWith('data:')) return route.continue();
    external.push(url);
    return route.abort();
  });
  page.on('pageerror', (err) => errors.push(err.message));
  page.on('console', (msg) => {
    if (msg.type() === 'error') errors.push(msg.text());
  });
  const res = await page.goto(`${baseUrl}${path}`);
  expect(res?.status()).toBe(status);
  return { page, external, errors };
}

function shoot(page: Page, name: string): Promise<Buffer> {
  mkdirSync(ARTIFACTS, { recursive: true });
  return page.screenshot({ path: `${ARTIFACTS}/short-link-${name}.png`, fullPage: true });
}

describe.skipIf(!existsSync(CHROMIUM))('QR landing page in headless Chromium at phone size', { tags: ['chromium'] }, () => {
  let browser: Browser;
  let ctx: TestContext;
  let baseUrl: string;

  beforeAll(async () => {
    [browser, ctx] = await Promise.all([launchChromium(), createTestContext()]);
    baseUrl = await listen(ctx.app);
  });
  afterAll(async () => {
    await browser?.close();
    await ctx?.close();
  });

  it('shows amount, payee, QR and bank buttons, then paid without a reload once the payment is confirmed', async () => {
    const { invoice, payment } = await partnerWithPayment(ctx, 'mof', { amount: 1234567.5, description: 'Замын хөдөлгөөний торгууль' });
    const qrpay = payment.qrpay;
    if (!qrpay?.shortUrl) throw new Error('no qrpay in the POST answer');
    const { page, external, errors } = await openPhone(browser, baseUrl, new URL(qrpay.shortUrl).pathname);

    expect(await page.textContent('#amount')).toBe('1,234,567.50\u00a0₮');
    expect(await page.textContent('#payee')).toBe(invoice.fixture.payee.name);
    expect(await page.textContent('#description')).toBe('Замын хөдөлгөөний торгууль');
    expect(await page.isVisible('.state-awaiting')).toBe(true);
    expect(await page.isVisible('.state-paid')).toBe(false);

    // The QR as the browser draws it decodes to the payload of the POST answer.
    const qr = page.locator('#qr-img');
    await qr.waitFor({ state: 'visible' });
    expect(await qr.evaluate((img: HTMLImageElement) => img.complete && img.naturalWidth > 0)).toBe(true);
    const drawn = PNG.sync.read(await qr.screenshot());
    expect(jsQR(new Uint8ClampedArray(drawn.data), drawn.width, drawn.height)?.data).toBe(qrpay.qrText);

    // One button per bank app, each the very deeplink of the POST answer, all on screen width.
    const buttons = page.locator('#banks a.bank');
    expect(await buttons.count()).toBe(qrpay.urls.length);
    expect(await buttons.evaluateAll((as) => as.map((a) => a.getAttribute('href')))).toEqual(qrpay.urls.map((u) => u.link));
    expect(await buttons.first().textContent()).toContain(qrpay.urls[0]?.description);
    // On a phone the bank buttons come before the QR: nobody scans their own screen.
    const top = (selector: string) => page.locator(selector).evaluate((el) => el.getBoundingClientRect().top);
    expect(await top('#banks')).toBeLessThan(await top('#qr-img'));
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
    expect(overflow).toBe(0);
    for (const box of await buttons.evaluateAll((as) => as.map((a) => a.getBoundingClientRect().toJSON() as DOMRect))) {
      expect(box.height).toBeGreaterThanOrEqual(44); // a comfortable tap target
      expect(box.right).toBeLessThanOrEqual(390);
    }
    await shoot(page, 'awaiting');

    // The citizen pays; the confirmation job confirms it; the page notices by itself.
    expect((await approve(ctx, invoice.refNum)).statusCode).toBe(200);
    await ctx.runJobs();
    await page.waitForSelector('body[data-status="confirmed"]', { timeout: 15_000 });
    expect(await page.isVisible('.state-paid')).toBe(true);
    expect(await page.isVisible('.state-awaiting')).toBe(false);
    expect(await page.locator('#pay').count()).toBe(0);
    expect(await page.textContent('#amount')).toBe('1,234,567.50\u00a0₮');
    // The paid state leads to the receipt, which the customer can open from the page left open.
    const receiptLink = page.locator('.state-paid a.receipt-link');
    expect(await receiptLink.isVisible()).toBe(true);
    await shoot(page, 'paid');
    await receiptLink.click();
    await page.waitForURL(`**/q/${payment.id}/receipt`);
    expect(await page.textContent('#payment-id')).toBe(payment.id);

    expect(external).toEqual([]);
    expect(errors).toEqual([]);
    await page.close();
  });

  it('prints the receipt of a confirmed payment on one A4 page', async () => {
    const { invoice, payment } = await partnerWithPayment(ctx, 'etax', {
      amount: 98765.25,
      description: 'Үл хөдлөх хөрөнгийн албан татвар, 2026 оны II улирал, Баянзүрх дүүрэг, 26-р хороо',
      payer: { register: 'УБ12345678', name: 'Батболд Дорж' },
    });
    expect((await approve(ctx, invoice.refNum)).statusCode).toBe(200);
    ctx.advance(ctx.config.confirmPollMs + 1000);
    await ctx.runJobs();
    const { page, external, errors } = await openPhone(browser, baseUrl, `/q/${payment.id}/receipt`);
    expect(await page.textContent('#payer-register')).toBe('УБ******78');
    await shoot(page, 'receipt');
    await page.emulateMedia({ media: 'print' });
    const pdf = await page.pdf({ format: 'A4', preferCSSPageSize: true, printBackground: true });
    // Each page of the document is one /Type /Page object (the tree's root is /Type /Pages).
    expect(pdf.toString('latin1').match(/\/Type\s*\/Page(?!s)/g)).toHaveLength(1);
    expect(external).toEqual([]);
    expect(errors).toEqual([]);
    await page.close();
  });

  it('shows a canceled payment as no longer payable', async () => {
    const { partner, payment } = await partnerWithPayment(ctx, 'police');
    expect((await cancelPayment(ctx, partner.apiKey, payment.id)).statusCode).toBe(200);
    const { page, external, errors } = await openPhone(browser, baseUrl, `/q/${payment.id}`);
    expect(await page.isVisible('.state-closed')).toBe(true);
    expect(await page.textContent('.state-closed')).toContain('No longer payable');
    expect(await page.isVisible('.reason-canceled')).toBe(true);
    expect(await page.isVisible('.reason-expired')).toBe(false);
    expect(await page.isVisible('.reason-failed')).toBe(false);
    expect(await page.isVisible('.state-awaiting')).toBe(false);
    expect(await page.locator('#qr-img').count()).toBe(0);
    await shoot(page, 'closed');
    expect(external).toEqual([]);
    expect(errors).toEqual([]);
    await page.close();
  });

  it('turns a page left open to closed when the payment is canceled meanwhile', async () => {
    const { partner, payment } = await partnerWithPayment(ctx, 'etax');
    const { page, external, errors } = await openPhone(browser, baseUrl, `/q/${payment.id}`);
    await page.locator('#qr-img').waitFor({ state: 'visible' });
    expect((await cancelPayment(ctx, partner.apiKey, payment.id)).statusCode).toBe(200);
    await page.waitForSelector('body[data-status="canceled"]', { timeout: 15_000 });
    expect(await page.isVisible('.state-closed')).toBe(true);
    expect(await page.locator('#qr-img').count()).toBe(0);
    expect(external).toEqual([]);
    expect(errors).toEqual([]);
    await page.close();
  });

  it('shows the 404 page for an unknown payment', async () => {
    const { page, external, errors } = await openPhone(browser, baseUrl, '/q/3f0c2a9e-8d7b-4c1e-9f3a-5b6d7e8f9a0b', 404);
    expect(await page.textContent('h1')).toBe('Төлбөр олдсонгүй');
    await shoot(page, 'not-found');
    expect(external).toEqual([]);
    // Chromium logs the 404 of the document itself as a console error; nothing else may appear.
    expect(errors.filter((e) => !/status of 404/.test(e))).toEqual([]);
    await page.close();
  });
});
