import { existsSync, mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { PNG } from 'pngjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { ARTIFACTS, CHROMIUM, launchChromium, listen } from '../helpers/browser.js';
import { createTestContext, type TestContext } from '../helpers/test-context.js';
import { REG } from '../helpers/fixtures.js';

// jsqr's typings describe a CommonJS default export that NodeNext cannot call as an ESM default.
const jsQR = createRequire(import.meta.url)('jsqr') as typeof import('jsqr').default;


interface Recorded {
  /** Script errors. */
  errors: string[];
  /** Every network request the page made (data: URLs are not requests), to any host. */
  requests: string[];
  /** Each answer the page got: status, method and path. */
  answers: string[];
}

/** Opens the page, recording its script errors and every request it makes; nothing is blocked. */
async function openSandbox(browser: Browser, baseUrl: string): Promise<{ page: Page; seen: Recorded }> {
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  const seen: Recorded = { errors: [], requests: [], answers: [] };
  page.on('pageerror', (err) => seen.errors.push(err.message));
  // A script, style or image the page's policy refused is an error too.
  page.on('console', (msg) => {
    if (/Content[- ]Security[- ]Policy|Refused to/i.test(msg.text())) seen.errors.push(msg.text());
  });
  page.on('request', (request) => {
    if (!request.url().startsWith('data:')) seen.requests.push(request.url());
  });
  page.on('response', (response) => {
    const url = new URL(response.url());
    if (url.protocol !== 'data:') seen.answers.push(`${response.status()} ${response.request().method()} ${url.pathname}`);
  });
  const res = await page.goto(`${baseUrl}/api/v1/sandbox`);
  expect(res?.status()).toBe(200);
  return { page, seen };
}

/** Self-contained: no request left the service under test (bank logos, fonts, favicon included). */
function expectOnlyOwnRequests(seen: Recorded, baseUrl: string): void {
  const origin = new URL(baseUrl).origin;
  expect(seen.requests.length).toBeGreaterThan(0);
  expect(seen.requests.filter((url) => new URL(url).origin !== origin)).toEqual([]);
  expect(seen.requests.filter((url) => new URL(url).pathname === '/favicon.ico')).toEqual([]);
}

/**
 * Waits for the payment card's status; when it never comes, the failure says what the page showed
 * instead and the last answers it got (a wait that timed out under load said nothing of either).
 */
async function untilPaymentStatus(page: Page, seen: Recorded, status: string, timeout = 30_000): Promise<void> {
  try {
    await page.waitForSelector(`#payment-status[data-status="${status}"]`, { timeout });
  } catch (err) {
    const shown = await page.evaluate(() => {
      const text = (id: string) => {
        const el = document.getElementById(id);
        return el?.checkVisibility() ? (el.textContent?.trim() ?? '') : null;
      };
      const pay = document.getElementById('pay-btn') as HTMLButtonElement | null;
      return { status: document.getElementById('payment-status')?.dataset.status ?? null, error: text('error'), selected: text('sel-status'), payDisabled: pay?.disabled ?? null };
    });
    throw new Error(`the payment never showed ${status}: the page showed ${JSON.stringify(shown)}; its last answers: ${seen.answers.slice(-10).join(', ')}`, { cause: err });
  }
}

const DAY = /^\d{4}-\d{2}-\d{2}$/;
const MINUTE = /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}$/;

async function search(page: Page, apiKey: string, ttd: string): Promise<void> {
  await page.fill('#api-key', apiKey);
  await page.selectOption('#search-kind', 'ttd');
  await page.fill('#search-value', ttd);
  await page.click('#search-btn');
}

describe.skipIf(!existsSync(CHROMIUM))('sandbox page in headless Chromium', { tags: ['chromium'] }, () => {
  let browser: Browser;
  let ctx: TestContext;
  let baseUrl: string;

  beforeAll(async () => {
    // The SPEC's limits (5/s, 60/min, 1000/h per key): the page must work within them and show a 429.
    [browser, ctx] = await Promise.all([
      launchChromium(),
      createTestContext({ config: { rateLimit: { perSecond: 5, perMinute: 60, perHour: 1000 } } }),
    ]);
    baseUrl = await listen(ctx.app);
  });
  afterAll(async () => {
    await browser?.close();
    await ctx?.close();
  });

  it('finds an invoice, pays it, shows the QR and deeplinks, approves it and sees the invoice paid', async () => {
    const { apiKey } = await ctx.partner();
    const { page, seen } = await openSandbox(browser, baseUrl);
    // The favicon is inline: no request for it.
    expect(await page.getAttribute('link[rel="icon"]', 'href')).toMatch(/^data:image\/svg\+xml,/);

    // A wrong key is reported with its status.
    await search(page, 'gpk_sandbox_wrong', REG);
    await expect.poll(() => page.textContent('#error')).toContain('HTTP 401');

    await search(page, apiKey, REG);
    const row = page.locator('#invoice-rows tr', { hasText: '12,000.5 ₮' });
    const rowStatus = row.locator('.badge');
    await row.waitFor();
    expect(await page.locator('#invoice-rows tr').count()).toBeGreaterThan(3);
    expect(await page.isVisible('#error')).toBe(false);
    // Dates are YYYY-MM-DD, not the browser locale's format (a due date is a day in Mongolian time).
    const dueDays = await page.locator('#invoice-rows td.due').allTextContents();
    expect(dueDays.length).toBeGreaterThan(3);
    for (const day of dueDays) expect(day).toMatch(DAY);
    expect(await row.locator('td.due').textContent()).toBe('2099-12-31');
    const openStatus = await rowStatus.textContent();
    expect(openStatus).toBe('open');
    await row.click();
    expect(await page.textContent('#sel-due')).toMatch(DAY);
    await page.click('#pay-btn');

    const qr = page.locator('#qr-img');
    await qr.waitFor({ state: 'visible' });
    await expect.poll(() => page.textContent('#payment-status')).toBe('submitted');
    // The Pay card follows the payment: its invoice is in payment, and a second Pay is not offered.
    expect(await page.textContent('#sel-status')).toContain('in payment (submitted)');
    expect(await page.isDisabled('#pay-btn')).toBe(true);
    expect(await qr.evaluate((img: HTMLImageElement) => img.complete && img.naturalWidth > 0)).toBe(true);
    expect(await qr.getAttribute('src')).toMatch(/^data:image\/png;base64,/);
    // What the browser actually draws decodes to the payload the API returned.
    const shot = PNG.sync.read(await qr.screenshot());
    const decoded = jsQR(new Uint8ClampedArray(shot.data), shot.width, shot.height);
    expect(decoded?.data).toBe(await page.textContent('#qr-text'));
    expect(await page.locator('#deeplinks li a').count()).toBeGreaterThan(0);
    expect(await page.locator('#deeplinks li a').first().getAttribute('href')).toMatch(/^[a-z][a-z0-9+.-]*:\/\//);
    // Bank logos are drawn by the page (inline SVG badges), and every one of them rendered.
    const logos = page.locator('#deeplinks img.logo');
    expect(await logos.count()).toBe(await page.locator('#deeplinks li').count());
    for (const src of await logos.evaluateAll((imgs: HTMLImageElement[]) => imgs.map((i) => i.getAttribute('src') ?? ''))) {
      expect(src).toMatch(/^data:image\/svg\+xml,/);
    }
    await expect.poll(() => logos.evaluateAll((imgs: HTMLImageElement[]) => imgs.every((i) => i.complete && i.naturalWidth > 0))).toBe(true);
    mkdirSync(ARTIFACTS, { recursive: true });
    await page.screenshot({ path: `${ARTIFACTS}/sandbox-submitted.png`, fullPage: true });

    await page.click('#approve-btn');
    await untilPaymentStatus(page, seen, 'confirmed', 10_000);
    expect(await page.textContent('#paid-at')).toMatch(MINUTE);
    // The invoice list follows the payment: the row is paid, no longer payable, and so is the selection.
    await expect.poll(() => rowStatus.textContent()).toBe('paid');
    expect(await row.getAttribute('class')).toContain('unpayable');
    expect(await page.textContent('#sel-status')).toBe('paid');
    expect(await page.isDisabled('#pay-btn')).toBe(true);
    expect(await page.isVisible('#error')).toBe(false);
    // Paid: the QR would pay again, so it goes; canceling stays possible.
    expect(await page.isVisible('#qr-img')).toBe(false);
    expect(await page.textContent('#payment-ended')).toContain('Paid');
    expect(await page.isVisible('#approve-btn')).toBe(false);
    await page.screenshot({ path: `${ARTIFACTS}/sandbox-confirmed.png`, fullPage: true });

    const canceledId = await page.textContent('#payment-id');
    await page.click('#cancel-btn');
    await untilPaymentStatus(page, seen, 'canceled');
    // Canceled: the QR and the 15 bank buttons go away, the card says why, nothing is left to press.
    expect(await page.isVisible('#qr-img')).toBe(false);
    expect(await page.isVisible('#deeplinks')).toBe(false);
    expect(await page.locator('#deeplinks li a:visible').count()).toBe(0);
    expect(await page.isVisible('#payment-ended')).toBe(true);
    expect(await page.textContent('#payment-ended')).toContain('Canceled');
    for (const button of ['#approve-btn', '#cancel-btn', '#refresh-btn']) expect(await page.isVisible(button)).toBe(false);
    await page.screenshot({ path: `${ARTIFACTS}/sandbox-canceled.png`, fullPage: true });
    await expect.poll(() => rowStatus.textContent()).toBe(openStatus);
    expect(await page.isEnabled('#pay-btn')).toBe(true);
    expect(await page.textContent('#sel-status')).toBe(openStatus);

    // A refused attempt replaces the earlier payment card: no stale QR, id or buttons stay on screen.
    await row.click();
    await page.fill('#pay-amount', '99999999');
    await page.click('#pay-btn');
    await untilPaymentStatus(page, seen, 'refused');
    expect(await page.textContent('#refusal')).toContain('HTTP 422');
    expect(await page.textContent('#refusal-text')).toBe('Amount does not match the invoice balance');
    expect(await page.textContent('#refusal-ref')).toBe('MOF-T-1');
    expect(await page.isVisible('#payment-body')).toBe(false);
    expect(await page.isVisible('#qr-img')).toBe(false);
    expect(await page.isVisible('#approve-btn')).toBe(false);
    expect(await page.textContent('#payment-card')).not.toContain(canceledId ?? '');
    expect(await page.isVisible('#error')).toBe(false);
    await page.screenshot({ path: `${ARTIFACTS}/sandbox-422.png`, fullPage: true });

    // And the next successful attempt replaces the refusal.
    await page.fill('#pay-amount', '');
    await page.click('#pay-btn');
    await untilPaymentStatus(page, seen, 'submitted');
    expect(await page.isVisible('#refusal')).toBe(false);
    expect(await page.isVisible('#qr-img')).toBe(true);
    expect(await page.isVisible('#payment-ended')).toBe(false);
    expect(await page.locator('#deeplinks li a:visible').count()).toBeGreaterThan(0);
    expect(await page.textContent('#payment-id')).not.toBe(canceledId);

    expectOnlyOwnRequests(seen, baseUrl);
    expect(seen.errors).toEqual([]);
    await page.close();
  });

  it('plants a scenario invoice from the picker and walks its payment: refused, then approved', async () => {
    const { id, apiKey } = await ctx.partner();
    // A fast machine makes the walk's plants, payments and approval more than 5 calls in a second;
    // the limit has a test of its own below, so this key gets room.
    const roomy = await ctx.admin.inject({
      method: 'PATCH',
      url: `/admin/partners/${id}`,
      headers: { authorization: `Bearer ${ctx.config.adminToken}` },
      payload: { rateLimits: { perSecond: 50, perMinute: 600, perHour: 10_000 } },
    });
    expect(roomy.statusCode).toBe(200);
    const { page, seen } = await openSandbox(browser, baseUrl);
    await page.fill('#api-key', apiKey);
    // The picker lists what GET /sandbox/scenarios lists, each with its description.
    await page.locator('#scenario option[value="reject"]').waitFor({ state: 'attached' });
    const names = await page.locator('#scenario option').evaluateAll((options: HTMLOptionElement[]) => options.map((o) => o.value));
    expect(names).toEqual(expect.arrayContaining(['approve', 'reject', 'already-paid', 'linked']));
    expect(await page.isEnabled('#scenario')).toBe(true);

    await page.selectOption('#scenario', 'reject');
    expect(await page.textContent('#scenario-desc')).toContain('422');
    await page.fill('#scenario-amount', '2500.5');
    await page.click('#scenario-btn');
    await expect.poll(() => page.textContent('#scenario-planted')).toContain('(reject, open)');
    const planted = page.locator('#invoice-rows tr');
    expect(await planted.count()).toBe(1);
    expect(await planted.locator('td.num').textContent()).toBe('2,500.5 ₮');
    const rejectId = await page.textContent('#sel-id');
    expect(await planted.getAttribute('data-invoice-id')).toBe(rejectId);
    expect(await page.inputValue('#search-value')).toMatch(/^SBX-/);
    await page.click('#pay-btn');
    await untilPaymentStatus(page, seen, 'refused');
    expect(await page.textContent('#refusal-status')).toContain('HTTP 422');
    expect(await page.textContent('#refusal-text')).toBe('not accepted at this time');
    expect(await page.textContent('#refusal-invoice')).toBe(rejectId);
    expect(await page.isVisible('#error')).toBe(false);
    mkdirSync(ARTIFACTS, { recursive: true });
    await page.screenshot({ path: `${ARTIFACTS}/sandbox-scenario-reject.png`, fullPage: true });

    // An amount past the service's maximum is its 400, shown in the error box like any other.
    await page.selectOption('#scenario', 'approve');
    await page.fill('#scenario-amount', '100000000000000');
    await page.click('#scenario-btn');
    await expect.poll(() => page.textContent('#error')).toContain('HTTP 400');
    expect(await page.textContent('#error')).toContain('Create invoice');
    expect(await page.textContent('#sel-id')).toBe(rejectId);

    await page.fill('#scenario-amount', '');
    await page.click('#scenario-btn');
    await expect.poll(() => page.textContent('#scenario-planted')).toContain('(approve, open)');
    expect(await page.isVisible('#error')).toBe(false);
    const approveId = await page.textContent('#sel-id');
    expect(approveId).not.toBe(rejectId);
    expect(await page.textContent('#sel-amount')).toBe('10,000 ₮');
    await page.click('#pay-btn');
    await untilPaymentStatus(page, seen, 'submitted');
    expect(await page.isVisible('#refusal')).toBe(false);
    expect(await page.textContent('#payment-invoices')).toBe(approveId);
    await page.click('#approve-btn');
    await untilPaymentStatus(page, seen, 'confirmed', 10_000);
    expect(await page.textContent('#payment-ended')).toContain('Paid');
    await expect.poll(() => page.textContent('#sel-status')).toBe('paid');
    expect(await page.locator('#invoice-rows tr .badge').textContent()).toBe('paid');
    expect(await page.isVisible('#error')).toBe(false);
    await page.screenshot({ path: `${ARTIFACTS}/sandbox-scenario-approve.png`, fullPage: true });

    expectOnlyOwnRequests(seen, baseUrl);
    expect(seen.errors).toEqual([]);
    await page.close();
  });

  it('shows 429 from the rate limiter with its retry delay', async () => {
    const { apiKey } = await ctx.partner(); // limits are per key: the other test's quota is untouched
    const { page, seen } = await openSandbox(browser, baseUrl);
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
    expectOnlyOwnRequests(seen, baseUrl);
    expect(seen.errors).toEqual([]);
    await page.close();
  });
});
