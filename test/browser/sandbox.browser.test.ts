import { existsSync, mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { PNG } from 'pngjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromium, type Browser, type Page } from 'playwright-core';
import { createTestContext, type TestContext } from '../helpers/test-context.js';
import { REG } from '../helpers/fixtures.js';

// jsqr's typings describe a CommonJS default export that NodeNext cannot call as an ESM default.
const jsQR = createRequire(import.meta.url)('jsqr') as typeof import('jsqr').default;

const CHROMIUM = '/usr/bin/chromium';
const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];
const ARTIFACTS = 'artifacts';

async function listen(ctx: TestContext): Promise<string> {
  await ctx.app.listen({ port: 0, host: '127.0.0.1' });
  const address = ctx.app.server.address();
  if (typeof address !== 'object' || !address) throw new Error('no listening address');
  return `http://127.0.0.1:${address.port}`;
}

/** A page that only talks to the service under test (bank logos are remote URLs) and records script errors. */
async function openSandbox(browser: Browser, baseUrl: string, pageErrors: string[]): Promise<Page> {
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  await page.route('**/*', (route) => (route.request().url().startsWith(baseUrl) ? route.continue() : route.abort()));
  page.on('pageerror', (err) => pageErrors.push(err.message));
  const res = await page.goto(`${baseUrl}/api/v1/sandbox`);
  expect(res?.status()).toBe(200);
  return page;
}

async function search(page: Page, apiKey: string, ttd: string): Promise<void> {
  await page.fill('#api-key', apiKey);
  await page.selectOption('#search-kind', 'ttd');
  await page.fill('#search-value', ttd);
  await page.click('#search-btn');
}

describe.skipIf(!existsSync(CHROMIUM))('sandbox page in headless Chromium', () => {
  let browser: Browser;
  let ctx: TestContext;
  let baseUrl: string;

  beforeAll(async () => {
    // The SPEC's limits (5/s, 60/min, 1000/h per key): the page must work within them and show a 429.
    [browser, ctx] = await Promise.all([
      chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS, headless: true }),
      createTestContext({ config: { rateLimit: { perSecond: 5, perMinute: 60, perHour: 1000 } } }),
    ]);
    baseUrl = await listen(ctx);
  });
  afterAll(async () => {
    await browser?.close();
    await ctx?.close();
  });

  it('finds an invoice, pays it, shows the QR and deeplinks, approves it and sees it confirmed', async () => {
    const { apiKey } = await ctx.partner();
    const pageErrors: string[] = [];
    const page = await openSandbox(browser, baseUrl, pageErrors);

    // A wrong key is reported with its status.
    await search(page, 'gpk_sandbox_wrong', REG);
    await expect.poll(() => page.textContent('#error')).toContain('HTTP 401');

    await search(page, apiKey, REG);
    const row = page.locator('#invoice-rows tr', { hasText: '12,000.5 ₮' });
    await row.waitFor();
    expect(await page.locator('#invoice-rows tr').count()).toBeGreaterThan(3);
    expect(await page.isVisible('#error')).toBe(false);
    await row.click();
    await page.click('#pay-btn');

    const qr = page.locator('#qr-img');
    await qr.waitFor({ state: 'visible' });
    await expect.poll(() => page.textContent('#payment-status')).toBe('submitted');
    expect(await qr.evaluate((img: HTMLImageElement) => img.complete && img.naturalWidth > 0)).toBe(true);
    expect(await qr.getAttribute('src')).toMatch(/^data:image\/png;base64,/);
    // What the browser actually draws decodes to the payload the API returned.
    const shot = PNG.sync.read(await qr.screenshot());
    const decoded = jsQR(new Uint8ClampedArray(shot.data), shot.width, shot.height);
    expect(decoded?.data).toBe(await page.textContent('#qr-text'));
    expect(await page.locator('#deeplinks li a').count()).toBeGreaterThan(0);
    expect(await page.locator('#deeplinks li a').first().getAttribute('href')).toMatch(/^[a-z][a-z0-9+.-]*:\/\//);

    await page.click('#approve-btn');
    await page.waitForSelector('#payment-status[data-status="confirmed"]', { timeout: 10_000 });
    expect(await page.textContent('#paid-at')).not.toBe('—');
    expect(await page.isVisible('#error')).toBe(false);

    mkdirSync(ARTIFACTS, { recursive: true });
    await page.screenshot({ path: `${ARTIFACTS}/sandbox.png`, fullPage: true });

    await page.click('#cancel-btn');
    await page.waitForSelector('#payment-status[data-status="canceled"]');
    expect(pageErrors).toEqual([]);
    await page.close();
  });

  it('shows 429 from the rate limiter with its retry delay', async () => {
    const { apiKey } = await ctx.partner(); // limits are per key: the other test's quota is untouched
    const pageErrors: string[] = [];
    const page = await openSandbox(browser, baseUrl, pageErrors);
    await search(page, apiKey, REG);
    await page.locator('#invoice-rows tr').first().waitFor();
    // A burst past 5 per second, as an impatient user with a double-clicking mouse would send.
    await page.evaluate(() => {
      const form = document.getElementById('search-form') as HTMLFormElement;
      for (let i = 0; i < 7; i++) form.requestSubmit();
    });
    await expect.poll(() => page.textContent('#error')).toContain('HTTP 429');
    expect(await page.textContent('#error')).toMatch(/retry in \d+ s/);
    expect(await page.textContent('#log')).toContain('429');
    mkdirSync(ARTIFACTS, { recursive: true });
    await page.screenshot({ path: `${ARTIFACTS}/sandbox-429.png` });
    expect(pageErrors).toEqual([]);
    await page.close();
  });
});
