import { existsSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser } from 'playwright-core';
import { CHROMIUM, launchChromium, listen } from '../helpers/browser.js';
import { createTestContext, type TestContext } from '../helpers/test-context.js';
import { partnerWithPayment } from '../helpers/api.js';

/** Every HTML page the service serves, on the listener that serves it. */
interface ServedPage {
  name: string;
  base: () => string;
  path: () => string;
  status: number;
}

/** The one policy: nothing inline but by hash, nothing from another host, never framed. */
function expectPagePolicy(headers: Headers): void {
  const csp = headers.get('content-security-policy') ?? '';
  expect(csp).not.toContain('unsafe-inline');
  expect(csp).not.toContain('unsafe-eval');
  expect(csp).not.toMatch(/https?:|\*/);
  expect(csp).toContain("default-src 'none'");
  expect(csp.split(';').map((d) => d.trim())).toContain("frame-ancestors 'none'");
  expect(headers.get('x-frame-options')).toBe('DENY');
  expect(headers.get('x-content-type-options')).toBe('nosniff');
  expect(headers.get('referrer-policy')).toBe('no-referrer');
  expect(headers.get('cache-control')).toBe('no-store');
}

describe.skipIf(!existsSync(CHROMIUM))('every page under its security policy, in headless Chromium', { tags: ['chromium'] }, () => {
  let browser: Browser;
  let ctx: TestContext;
  let apiUrl: string;
  let adminUrl: string;
  let shortPath: string;

  beforeAll(async () => {
    [browser, ctx] = await Promise.all([launchChromium(), createTestContext()]);
    [apiUrl, adminUrl] = await Promise.all([listen(ctx.app), listen(ctx.admin)]);
    const { payment } = await partnerWithPayment(ctx, 'mof');
    shortPath = new URL(payment.qrpay?.shortUrl ?? '').pathname;
  });
  afterAll(async () => {
    await browser?.close();
    await ctx?.close();
  });

  const PAGES: ServedPage[] = [
    { name: 'operator console', base: () => adminUrl, path: () => '/', status: 200 },
    { name: 'sandbox page', base: () => apiUrl, path: () => '/api/v1/sandbox', status: 200 },
    { name: 'QR landing page', base: () => apiUrl, path: () => shortPath, status: 200 },
    { name: 'QR landing page, unknown payment', base: () => apiUrl, path: () => '/q/00000000-0000-4000-8000-000000000000', status: 404 },
  ];

  it.each(PAGES)('$name: sent under the one policy, and runs under it without a violation', async ({ base, path, status }) => {
    const res = await fetch(`${base()}${path()}`);
    expect(res.status).toBe(status);
    expectPagePolicy(res.headers);

    const page = await browser.newPage();
    const problems: string[] = [];
    page.on('pageerror', (err) => problems.push(err.message));
    page.on('console', (msg) => {
      if (/Content[- ]Security[- ]Policy|Refused to/i.test(msg.text())) problems.push(msg.text());
    });
    const scripts: string[] = [];
    page.on('response', (r) => {
      if (r.request().resourceType() === 'script') scripts.push(`${r.status()} ${r.url()}`);
    });
    const opened = await page.goto(`${base()}${path()}`);
    expect(opened?.status()).toBe(status);
    await page.waitForLoadState('load');
    // A page that loads a script gets it whole: its integrity attribute matched the bytes served.
    const tags = await page.$$eval('script[src]', (els) => els.map((s) => s.getAttribute('integrity') ?? ''));
    for (const integrity of tags) expect(integrity).toMatch(/^sha256-/);
    expect(scripts.every((line) => line.startsWith('200 '))).toBe(true);
    expect(problems).toEqual([]);
    await page.close();
  });

  it('API reference page: Swagger UI runs under the one policy, lists the operations and takes a key, without a violation', async () => {
    const res = await fetch(`${apiUrl}/api/v1/docs`);
    expect(res.status).toBe(200);
    expectPagePolicy(res.headers);

    const page = await browser.newPage();
    const problems: string[] = [];
    page.on('pageerror', (err) => problems.push(err.message));
    page.on('console', (msg) => {
      if (/Content[- ]Security[- ]Policy|Refused to/i.test(msg.text())) problems.push(msg.text());
    });
    await page.goto(`${apiUrl}/api/v1/docs`);
    // The operations come from /api/v1/docs/json, fetched under connect-src 'self'.
    await page.locator('.opblock-summary-path', { hasText: '/invoices' }).first().waitFor();
    expect(await page.locator('.opblock').count()).toBeGreaterThan(10);
    // The dialog partners paste their key into works as before.
    await page.click('button.authorize');
    await page.fill('.modal-ux input', 'gpk_sandbox_not-a-real-key');
    await page.click('.modal-ux button[type=submit]');
    await page.locator('.modal-ux button', { hasText: 'Logout' }).waitFor();
    expect(problems).toEqual([]);
    await page.close();
  });

  it('API reference page: another page cannot frame it', async () => {
    const page = await browser.newPage();
    const refused: string[] = [];
    page.on('console', (msg) => {
      if (msg.text().includes("frame-ancestors 'none'")) refused.push(msg.text());
    });
    await page.setContent(`<iframe src="${apiUrl}/api/v1/docs"></iframe>`, { waitUntil: 'load' });
    await expect.poll(() => refused.length).toBeGreaterThan(0);
    expect(await page.frames()[1]?.locator('#swagger-ui').count()).toBe(0);
    await page.close();
  });

  it('serves each page script as JavaScript, without the page\'s own framing rules needed', async () => {
    for (const [base, path] of [[adminUrl, '/console.js'], [apiUrl, '/api/v1/sandbox/sandbox.js']] as const) {
      const res = await fetch(`${base}${path}`);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
      expect(res.headers.get('x-content-type-options')).toBe('nosniff');
      expect(await res.text()).not.toMatch(/^\s*import\s|\brequire\(/m);
    }
  });
});
