import { existsSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser } from 'playwright-core';
import { CHROMIUM, launchChromium, listen } from '../helpers/browser.js';
import { expectClean, expectFits, expectLocalTimes, openConsole, screenshot, signIn } from '../helpers/console-page.js';
import { createTestContext, type TestContext } from '../helpers/test-context.js';
import { approve, partnerWithPayment } from '../helpers/api.js';
import { startReceiver, type WebhookReceiver } from '../helpers/webhook-receiver.js';
import { financeDayOf } from '../../src/domain/finance-day.js';

describe.skipIf(!existsSync(CHROMIUM))('operator console in headless Chromium', { tags: ['chromium'] }, () => {
  let browser: Browser;
  let ctx: TestContext;
  let receiver: WebhookReceiver;
  let baseUrl: string;

  beforeAll(async () => {
    [browser, ctx, receiver] = await Promise.all([
      launchChromium(),
      createTestContext(),
      startReceiver(),
    ]);
    baseUrl = await listen(ctx.admin);
  });
  afterAll(async () => {
    await browser?.close();
    await ctx?.close();
    await receiver?.close();
  });

  it('GET / answers 200 text/html under its CSP, and the page asks nothing of another host', async () => {
    const res = await fetch(`${baseUrl}/`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/html/);
    expect(res.headers.get('content-security-policy')).toContain("default-src 'none'");
    const html = await res.text();
    expect(html).not.toMatch(/https?:\/\//i);
    expect(html).not.toMatch(/(src|href)\s*=\s*["']?\/\//i);
    const css = /<style>([\s\S]*?)<\/style>/.exec(html)?.[1] ?? '';
    expect(css).not.toMatch(/@import|url\(|@font-face/i);
    expect(html).not.toMatch(/\beval\(|new Function\(/);

    const session = await openConsole(browser, baseUrl);
    const { page } = session;
    expect(await page.isVisible('#tabs')).toBe(false);

    // A wrong token is refused with its status, and the page stays signed out.
    await page.fill('#token', 'not-the-admin-token');
    await page.click('#sign-in');
    await expect.poll(() => page.textContent('#error')).toContain('HTTP 401');
    expect(await page.textContent('#error')).toContain('Invalid or missing admin token');
    expect(await page.isVisible('#tabs')).toBe(false);
    expect(await page.evaluate(() => sessionStorage.length)).toBe(0);
    await screenshot(page, 'signin-error');

    await signIn(page, ctx.config.adminToken);
    expect(await page.isVisible('#error')).toBe(false);
    for (const [tab, table] of [
      ['partners', 'partners-table'],
      ['payments', 'payments-table'],
      ['cases', 'cases-table'],
      ['reconciliation', 'discrepancies-table'],
      ['deliveries', 'deliveries-table'],
      ['audit', 'audit-table'],
    ] as const) {
      await page.click(`#tab-${tab}`);
      await page.locator(`#${table}[data-state="ready"], #${table}[data-state="empty"]`).waitFor();
      expect(await page.isVisible(`#section-${tab}`)).toBe(true);
    }
    // The token survives a reload of the tab (session storage), and the screen is kept in the URL.
    await page.reload();
    await page.locator('#audit-table[data-state="ready"], #audit-table[data-state="empty"]').waitFor();
    expect(await page.isVisible('#signin-section')).toBe(false);

    const foreign = session.requests.filter((url) => !url.startsWith(`${baseUrl}/`) && !url.startsWith('data:'));
    expect(foreign).toEqual([]);
    expect(session.requests.some((url) => url.startsWith(`${baseUrl}/admin/`))).toBe(true);
    await expectClean(session);

    await page.click('#sign-out');
    await page.locator('#signin-section').waitFor({ state: 'visible' });
    expect(await page.evaluate(() => sessionStorage.length)).toBe(0);
    await page.close();
  });

  it('finds a payment, reads its timeline, runs a reconciliation, resolves a discrepancy, redelivers a delivery, sees both in the audit log', async () => {
    // A partner with a webhook, a payment confirmed (and its webhook delivered), then left out of
    // the ministry's settlement: today's reconciliation finds it missing at the ministry.
    const { partner, invoice, payment } = await partnerWithPayment(ctx, 'mof');
    const hook = await ctx.api(partner.apiKey, {
      method: 'POST',
      url: '/api/v1/webhooks',
      payload: { url: receiver.url, secret: 'console-test-secret-0123456789abcdef', events: ['payment.confirmed'] },
    });
    expect(hook.statusCode, hook.body).toBe(201);
    expect((await approve(ctx, invoice.refNum)).statusCode).toBe(200);
    await ctx.runJobs();
    const deliveredFor = () => receiver.received.filter((r) => r.body.includes(payment.id)).length;
    expect(deliveredFor()).toBe(1);
    expect((await ctx.sim('/__control/settlement/drop', { refNum: invoice.refNum })).statusCode).toBe(200);

    const session = await openConsole(browser, baseUrl);
    const { page } = session;
    await signIn(page, ctx.config.adminToken);

    // Payments: search by partner, open the payment, read its timeline.
    await page.click('#tab-payments');
    await page.fill('#pay-partnerId', partner.id);
    await page.click('#payments-search');
    const row = page.locator(`#payments-table tr.payment-row[data-id="${payment.id}"]`);
    await row.waitFor();
    expect(await page.locator('#payments-table tr.payment-row').count()).toBe(1);
    expect(await row.getAttribute('data-status')).toBe('confirmed');
    const rowText = await row.textContent();
    expect(rowText).toContain('10,000.00 ₮');
    expect(rowText).toContain(invoice.refNum);
    // Time bounds: a finance day takes in the whole day; a time before the payment leaves it out.
    const today = financeDayOf(new Date());
    await page.fill('#pay-from', today);
    await page.fill('#pay-to', today);
    await page.click('#payments-search');
    await page.locator(`#payments-table[data-state="ready"] tr.payment-row[data-id="${payment.id}"]`).waitFor();
    await page.fill('#pay-from', '');
    await page.fill('#pay-to', '2020-01-01 08:00:00');
    await page.click('#payments-search');
    await page.locator('#payments-table[data-state="empty"]').waitFor();
    expect(await page.textContent('#payments-table')).toContain('No payment matches these filters');
    await page.fill('#pay-to', '');
    await page.click('#payments-search');
    await row.waitFor();
    await row.click();
    await page.locator('#payment-detail[data-state="ready"]').waitFor();
    const steps = await page.$$eval('#timeline tbody tr', (trs) =>
      trs.map((tr) => {
        const d = (tr as HTMLElement).dataset;
        return [d.from, d.to, d.event, d.cause];
      }),
    );
    expect(steps).toEqual([
      ['', 'pending', 'created', 'partner_request'],
      ['pending', 'submitted', 'ministry_accepted', 'partner_request'],
      ['submitted', 'confirmed', 'ministry_approved', 'confirmation_job'],
    ]);
    const timelineText = await page.textContent('#timeline');
    expect(timelineText).toContain('confirmation_job');
    // The ministry's answers are shown as compact JSON.
    const answers = await page.$$eval('#timeline code.json', (codes) => codes.map((c) => c.textContent ?? ''));
    expect(answers.length).toBeGreaterThan(0);
    for (const a of answers) expect(() => JSON.parse(a)).not.toThrow();
    expect(await page.textContent('#payment-detail')).toContain(invoice.id);
    await expectLocalTimes(page);
    // A laptop's width shows every column of the list (its times go on two lines).
    await page.setViewportSize({ width: 1280, height: 900 });
    await expectFits(page, '#payments-table');
    await screenshot(page, 'payments');
    await page.setViewportSize({ width: 1440, height: 900 });

    // Reconciliation: run today's finance day (UTC+8), see the one discrepancy, resolve it with a note.
    await page.click('#tab-reconciliation');
    expect(await page.inputValue('#recon-day')).toBe(today);
    await page.click('#recon-run');
    await page.locator('#recon-status[data-status="completed"]').waitFor();
    expect(await page.textContent('#recon-discrepancies')).toBe('1');
    expect(await page.textContent('#recon-matched')).toBe('0');
    expect(await page.$$eval('#recon-sources tbody tr', (trs) => trs.map((tr) => `${(tr as HTMLElement).dataset.source}:${(tr as HTMLElement).dataset.status}`).sort())).toEqual([
      'etax:completed',
      'mof:completed',
      'police:completed',
    ]);
    const run = page.locator('#runs-table tr.run-row[data-status="completed"]', { hasText: 'admin' });
    await run.waitFor();
    expect(await run.textContent()).toContain(today);
    expect(await run.locator('td').nth(5).textContent()).toBe('1');
    const discrepancy = page.locator(`#discrepancies-table tr.discrepancy-row[data-ref-num="${invoice.refNum}"]`);
    await discrepancy.waitFor();
    expect(await page.locator('#discrepancies-table tr.discrepancy-row').count()).toBe(1);
    expect(await discrepancy.getAttribute('data-kind')).toBe('missing_at_ministry');
    expect(await discrepancy.getAttribute('data-status')).toBe('open');
    expect(await discrepancy.textContent()).toContain('10,000.00 ₮');
    const discrepancyId = await discrepancy.getAttribute('data-id');
    // A laptop's width, where the table fits until a note is opened.
    await page.setViewportSize({ width: 1280, height: 900 });
    const fitOf = () =>
      page.$eval('#discrepancies-table', (table) => {
        const wrap = table.parentElement as HTMLElement;
        const lastHeader = table.querySelector('thead th:last-child') as HTMLElement;
        return { overflow: wrap.scrollWidth - wrap.clientWidth, lastRight: lastHeader.getBoundingClientRect().right, wrapRight: wrap.getBoundingClientRect().right };
      });
    expect((await fitOf()).overflow).toBeLessThanOrEqual(0);
    await discrepancy.locator('button.resolve').click();
    const note = 'Ministry re-sent the settlement file; payment present there';
    const resolveRow = page.locator(`#discrepancies-table tr.resolve-row[data-id="${discrepancyId}"]`);
    await resolveRow.locator('input.resolve-note').fill(note);
    // The note takes a row of its own: the table keeps its width and its last column stays in view.
    const fit = await fitOf();
    expect(fit.overflow).toBeLessThanOrEqual(0);
    expect(fit.lastRight).toBeLessThanOrEqual(fit.wrapRight + 1);
    await screenshot(page, 'reconciliation');
    await page.setViewportSize({ width: 1440, height: 900 });
    await resolveRow.locator('button.resolve-confirm').click();
    const resolved = page.locator(`#discrepancies-table tr.discrepancy-row[data-id="${discrepancyId}"][data-status="resolved"]`);
    await resolved.waitFor();
    expect(await resolved.textContent()).toContain(note);
    expect(await resolved.textContent()).toContain('by admin');
    await expectLocalTimes(page);
    await screenshot(page, 'reconciliation-resolved');
    // No open discrepancy is left: the list says so.
    await page.click('#disc-refresh');
    await page.locator('#discrepancies-table[data-state="empty"]').waitFor();
    expect(await page.textContent('#discrepancies-table')).toContain('No open discrepancies');

    // Deliveries: filter by the partner, redeliver the confirmed webhook.
    await page.click('#tab-deliveries');
    await page.fill('#del-partnerId', partner.id);
    await page.click('#deliveries-search');
    const delivery = page.locator('#deliveries-table tr.delivery-row[data-status="succeeded"]');
    await delivery.waitFor();
    await expect.poll(() => page.locator('#deliveries-table tr.delivery-row').count()).toBe(1);
    expect(await delivery.getAttribute('data-attempts')).toBe('1');
    expect(await delivery.textContent()).toContain('HTTP 200');
    expect(await delivery.textContent()).toContain(receiver.url);
    // The partner's pushes by status, skipped (nothing sent) apart from delivered: it has none.
    await expect.poll(() => page.textContent('#push-counts')).toMatch(/delivered 0\s+skipped 0\s+pending 0\s+failed 0/);
    const deliveryId = await delivery.getAttribute('data-id');
    await delivery.locator('button.redeliver').click();
    await page.locator(`#deliveries-table tr.delivery-row[data-id="${deliveryId}"][data-status="pending"]`).waitFor();
    await ctx.runJobs();
    await expect.poll(deliveredFor).toBe(2);
    await page.click('#deliveries-search');
    await page.locator(`#deliveries-table tr.delivery-row[data-id="${deliveryId}"][data-status="succeeded"][data-attempts="2"]`).waitFor();
    await expectLocalTimes(page);
    // At a laptop's width every column is in view, and the URL reads in lines of many characters, not one.
    await page.setViewportSize({ width: 1280, height: 900 });
    await expectFits(page, '#deliveries-table');
    const url = await page.locator(`#deliveries-table tr.delivery-row[data-id="${deliveryId}"] td.url`).evaluate((td) => {
      const text = td.firstChild as Text;
      const range = document.createRange();
      range.selectNodeContents(text);
      const lines = new Set([...range.getClientRects()].map((r) => Math.round(r.top))).size;
      return { text: text.data, lines, width: td.getBoundingClientRect().width };
    });
    expect(url.text).toBe(receiver.url);
    expect(url.lines).toBeGreaterThan(0);
    expect(url.lines).toBeLessThanOrEqual(Math.ceil(url.text.length / 20));
    expect(url.width).toBeGreaterThanOrEqual(180);
    await screenshot(page, 'deliveries');
    await page.setViewportSize({ width: 1440, height: 900 });
    // A disabled webhook's state shows beside its url.
    const hookId = hook.json<{ id: string }>().id;
    expect((await ctx.api(partner.apiKey, { method: 'PATCH', url: `/api/v1/webhooks/${hookId}`, payload: { enabled: false } })).statusCode).toBe(200);
    await page.click('#deliveries-search');
    await expect.poll(() => delivery.textContent()).toContain('webhook disabled: manual');

    // Audit: both actions, by operator admin, naming what they acted on.
    await page.click('#tab-audit');
    const resolveEntry = page.locator(`#audit-table tr.audit-row[data-action="discrepancy.resolve"][data-target-id="${discrepancyId}"]`);
    const redeliverEntry = page.locator(`#audit-table tr.audit-row[data-action="delivery.redeliver"][data-target-id="${deliveryId}"]`);
    await resolveEntry.waitFor();
    await redeliverEntry.waitFor();
    expect(await resolveEntry.getAttribute('data-operator')).toBe('admin');
    expect(await redeliverEntry.getAttribute('data-operator')).toBe('admin');
    expect(await resolveEntry.locator('td.operator').textContent()).toBe('admin');
    expect(await resolveEntry.textContent()).toContain(note);
    expect(await redeliverEntry.textContent()).toMatch(/status: succeeded\s*→\s*pending/);
    // Newest first: the redelivery came after the resolution.
    const actions = await page.$$eval('#audit-table tr.audit-row', (trs) => trs.map((tr) => (tr as HTMLElement).dataset.action));
    expect(actions.indexOf('delivery.redeliver')).toBeLessThan(actions.indexOf('discrepancy.resolve'));
    expect(actions).toContain('reconciliation.run');
    await expectLocalTimes(page);
    await screenshot(page, 'audit');
    await page.selectOption('#audit-action', 'delivery.redeliver');
    await page.locator('#audit-table[data-state="ready"]').waitFor();
    await expect.poll(() => page.$$eval('#audit-table tr.audit-row', (trs) => [...new Set(trs.map((tr) => (tr as HTMLElement).dataset.action))])).toEqual(['delivery.redeliver']);
    // By target: everything done to the discrepancy.
    await page.selectOption('#audit-action', '');
    await page.fill('#audit-target', discrepancyId ?? '');
    await page.click('#audit-search');
    await expect.poll(() => page.$$eval('#audit-table tr.audit-row', (trs) => trs.map((tr) => (tr as HTMLElement).dataset.action))).toEqual(['discrepancy.resolve']);

    await expectClean(session);
    await page.close();
  });

  it('away from Ulaanbaatar, shows times in local time and beneath a payment\'s creation the finance day it falls on', async () => {
    const { partner, payment } = await partnerWithPayment(ctx, 'etax');
    const session = await openConsole(browser, baseUrl, 'America/New_York');
    const { page } = session;
    await signIn(page, ctx.config.adminToken);
    expect(await page.textContent('#tz-note')).toMatch(/^times in local time \(UTC-0[45]:00\) · finance days in Ulaanbaatar time \(UTC\+08:00\)$/);
    await page.click('#tab-payments');
    await page.fill('#pay-partnerId', partner.id);
    await page.click('#payments-search');
    const created = page.locator(`#payments-table tr.payment-row[data-id="${payment.id}"] td.time`).first();
    await created.waitFor();
    const iso = (await created.getAttribute('title')) ?? '';
    const local = await page.evaluate((at) => {
      const d = new Date(at);
      const p = (n: number) => String(n).padStart(2, '0');
      return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
    }, iso);
    expect(await created.locator('span').allTextContents()).toEqual(local.split(' '));
    expect(await created.locator('.finance-day').textContent()).toBe(`finance day ${financeDayOf(new Date(iso))}`);
    // Not yet settled: no finance day under an empty Paid.
    expect(await page.locator(`#payments-table tr.payment-row[data-id="${payment.id}"] .finance-day`).count()).toBe(1);
    await page.setViewportSize({ width: 1280, height: 900 });
    await expectFits(page, '#payments-table');
    await screenshot(page, 'payments-new-york');
    await expectClean(session);
    await page.close();
  });

  it('creates a partner, shows its key once, changes its QR standard and rate limits, rotates its key and deactivates it', async () => {
    const other = await ctx.partner();
    const session = await openConsole(browser, baseUrl);
    const { page } = session;
    await signIn(page, ctx.config.adminToken);
    await page.locator('#partners-table[data-state="ready"], #partners-table[data-state="empty"]').waitFor();

    const name = `Console Bank ${Date.now()}`;
    await page.fill('#partner-name', name);
    await page.selectOption('#partner-qr', 'govstd');
    await page.click('#partner-create');
    await page.locator('#key-notice').waitFor({ state: 'visible' });
    const apiKey = (await page.textContent('#key-value')) ?? '';
    expect(apiKey).toMatch(/^gpk_sandbox_[A-Za-z0-9_-]{32,}$/);
    expect(await page.textContent('#key-notice')).toContain('only time the key is shown');
    // The key the notice shows is the partner's working key.
    expect((await ctx.api(apiKey, { method: 'GET', url: '/api/v1/webhooks' })).statusCode).toBe(200);

    const row = page.locator('#partners-table tr.partner-row', { hasText: name });
    await row.waitFor();
    const id = (await row.getAttribute('data-id')) ?? '';
    expect(await row.getAttribute('data-qr-standard')).toBe('govstd');
    expect(await row.getAttribute('data-active')).toBe('true');
    await expectLocalTimes(page);
    await screenshot(page, 'partners');
    // A laptop's width shows every column, the actions too, and a click scrolls nothing away.
    await page.setViewportSize({ width: 1280, height: 900 });
    await expectFits(page, '#partners-table');
    await row.locator('button.edit-limits').click();
    await expectFits(page, '#partners-table');
    expect(await page.$eval('#partners-table', (t) => (t.parentElement as HTMLElement).scrollLeft)).toBe(0);
    await screenshot(page, 'partners-1280-editing');
    await row.locator('button.cancel-limits').click();
    await page.setViewportSize({ width: 1440, height: 900 });

    // The QR standard, set from the row.
    await row.locator('select.qr-select').selectOption('qrpay');
    await page.locator(`#partners-table tr.partner-row[data-id="${id}"][data-qr-standard="qrpay"]`).waitFor();

    // Its own rate limits, set in place, then back to the defaults.
    const limitsRow = () => page.locator(`#partners-table tr.partner-row[data-id="${id}"]`);
    await limitsRow().locator('button.edit-limits').click();
    await limitsRow().locator('input.limit-input.perSecond').fill('20');
    await limitsRow().locator('input.limit-input.perMinute').fill('600');
    await limitsRow().locator('input.limit-input.perHour').fill('10000');
    await limitsRow().locator('button.save-limits').click();
    await page.locator(`#partners-table tr.partner-row[data-id="${id}"][data-limits="20/s · 600/min · 10000/h"]`).waitFor();
    const limitsOf = async () => {
      const res = await ctx.admin.inject({ method: 'GET', url: '/admin/partners', headers: { authorization: `Bearer ${ctx.config.adminToken}` } });
      return res.json<{ id: string; rateLimits: unknown }[]>().find((p) => p.id === id)?.rateLimits;
    };
    expect(await limitsOf()).toEqual({ perSecond: 20, perMinute: 600, perHour: 10000 });
    await limitsRow().locator('button.edit-limits').click();
    await limitsRow().locator('button.default-limits').click();
    await page.locator(`#partners-table tr.partner-row[data-id="${id}"][data-limits="default"]`).waitFor();
    expect(await limitsOf()).toBeNull();

    // One confirmation is armed at a time, on any row: arming another disarms the one before.
    const rotate = page.locator(`#partners-table tr.partner-row[data-id="${id}"] button.rotate-key`);
    const toggle = page.locator(`#partners-table tr.partner-row[data-id="${id}"] button.toggle-active`);
    const otherRotate = page.locator(`#partners-table tr.partner-row[data-id="${other.id}"] button.rotate-key`);
    const armed = () => page.$$eval('#partners-table button.armed', (buttons) => buttons.map((b) => b.textContent));
    await otherRotate.click();
    expect(await armed()).toEqual(['Confirm rotate']);
    await rotate.click();
    expect(await otherRotate.textContent()).toBe('Rotate key');
    await toggle.click();
    expect(await armed()).toEqual(['Confirm deactivate']);
    expect(await rotate.textContent()).toBe('Rotate key');

    // A new key: shown once, different from the first.
    await rotate.click();
    expect(await rotate.textContent()).toBe('Confirm rotate');
    expect(await toggle.textContent()).toBe('Deactivate');
    await rotate.click();
    await expect.poll(async () => page.textContent('#key-value')).not.toBe(apiKey);
    const rotatedKey = (await page.textContent('#key-value')) ?? '';
    expect(rotatedKey).toMatch(/^gpk_sandbox_/);
    expect(await page.textContent('#key-notice')).toContain('previous keys stop working at');

    // Deactivation asks for a second click.
    await toggle.click();
    expect(await toggle.textContent()).toBe('Confirm deactivate');
    await toggle.click();
    await page.locator(`#partners-table tr.partner-row[data-id="${id}"][data-active="false"]`).waitFor();
    const listed = await ctx.admin.inject({ method: 'GET', url: '/admin/partners', headers: { authorization: `Bearer ${ctx.config.adminToken}` } });
    expect(listed.json<{ id: string; active: boolean; qrStandard: string }[]>().find((p) => p.id === id)).toMatchObject({ active: false, qrStandard: 'qrpay' });
    expect((await ctx.api(rotatedKey, { method: 'GET', url: '/api/v1/webhooks' })).statusCode).not.toBe(200);
    await screenshot(page, 'partners-deactivated');

    // Once hidden, the key is gone from the page, and it was never stored.
    await page.click('#key-dismiss');
    expect(await page.isVisible('#key-notice')).toBe(false);
    const storage = await page.evaluate(() => JSON.stringify(sessionStorage) + JSON.stringify(localStorage));
    expect(storage).not.toContain(rotatedKey);
    expect(storage).not.toContain(apiKey);
    await page.reload();
    await page.locator(`#partners-table tr.partner-row[data-id="${id}"]`).waitFor();
    expect(await page.content()).not.toContain(rotatedKey);

    // The audit log tells the rotation from the creation.
    await page.click('#tab-audit');
    const entry = (action: string) => page.locator(`#audit-table tr.audit-row[data-action="${action}"][data-target-id="${id}"] td.change`);
    await entry('partner.rotate_key').waitFor();
    expect(await entry('partner.rotate_key').textContent()).toContain('key rotated: environment=sandbox');
    expect(await entry('partner.rotate_key').textContent()).not.toContain('created');
    expect(await entry('partner.create').textContent()).toContain(`created: name=${name}`);
    await screenshot(page, 'audit-partner');

    await expectClean(session);
    await page.close();
  });

  it('shows each list loading, then its error with the status, then empty', async () => {
    const session = await openConsole(browser, baseUrl);
    const { page } = session;
    await signIn(page, ctx.config.adminToken);
    const lonely = await ctx.partner();

    // The next deliveries read is slow and then fails.
    let release: () => void = () => undefined;
    const held = new Promise<void>((resolve) => (release = resolve));
    const deliveriesRead = (url: URL) => url.pathname === '/admin/deliveries';
    await page.route(deliveriesRead, async (route) => {
      await held;
      await route.fulfill({ status: 503, contentType: 'application/json', body: JSON.stringify({ statusCode: 503, error: 'Service Unavailable', message: 'Database unavailable' }) });
    });
    await page.click('#tab-deliveries');
    await page.locator('#deliveries-table[data-state="loading"]').waitFor();
    expect(await page.textContent('#deliveries-table')).toContain('Loading deliveries');
    await screenshot(page, 'loading');
    release();
    await page.locator('#deliveries-table[data-state="error"]').waitFor();
    expect(await page.textContent('#error')).toContain('HTTP 503');
    expect(await page.textContent('#error')).toContain('Database unavailable');
    expect(await page.textContent('#deliveries-table')).toContain('Could not load deliveries');
    await screenshot(page, 'error');

    await page.unroute(deliveriesRead);
    await page.click('#error-close');
    await page.fill('#del-partnerId', lonely.id);
    await page.click('#deliveries-search');
    await page.locator('#deliveries-table[data-state="empty"]').waitFor();
    expect(await page.textContent('#deliveries-table')).toContain('No delivery matches these filters');

    // A refused search shows the service's own violation messages.
    await page.click('#tab-payments');
    await page.fill('#pay-paymentId', 'not-a-uuid');
    await page.click('#payments-search');
    await page.locator('#payments-table[data-state="error"]').waitFor();
    expect(await page.textContent('#error')).toContain('HTTP 400');
    expect(await page.textContent('#error')).toContain('paymentId');
    await screenshot(page, 'invalid');
    // A bound the page cannot read is refused before it is sent.
    await page.fill('#pay-paymentId', '');
    await page.fill('#pay-from', 'yesterday');
    await page.click('#payments-search');
    await expect.poll(() => page.textContent('#error')).toContain('From is written YYYY-MM-DD');
    expect(session.pageErrors).toEqual([]);
    expect(session.cspViolations).toEqual([]);
    await page.close();
  });
});
