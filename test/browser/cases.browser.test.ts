import { existsSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { CHROMIUM, launchChromium, listen } from '../helpers/browser.js';
import { expectClean, expectFits, inUlaanbaatar, openConsole, screenshot, signIn } from '../helpers/console-page.js';
import { createTestContext, type TestContext } from '../helpers/test-context.js';
import { approve, partnerWithPayment, type Partner } from '../helpers/api.js';
import type { AdminCaseView, CaseDetailView, CaseView } from '../../src/schemas/case.schema.js';

const HOUR_MS = 3_600_000;

/** Every table of the screen at a laptop's width: none scrolls sideways, and neither does the page. */
async function expectScreenFits(page: Page): Promise<void> {
  await expectFits(page, '#cases-table');
  const wraps = await page.$$eval('#section-cases .table-wrap', (divs) =>
    divs.filter((d) => (d as HTMLElement).offsetParent !== null).map((d) => ({ table: d.querySelector('table')?.id ?? '', overflow: d.scrollWidth - d.clientWidth })));
  expect(wraps.length).toBeGreaterThan(1);
  for (const w of wraps) expect(w.overflow, w.table).toBeLessThanOrEqual(0);
}

describe.skipIf(!existsSync(CHROMIUM))("the console's Cases screen in headless Chromium", { tags: ['chromium'] }, () => {
  let browser: Browser;
  let ctx: TestContext;
  let baseUrl: string;

  beforeAll(async () => {
    [browser, ctx] = await Promise.all([launchChromium(), createTestContext()]);
    baseUrl = await listen(ctx.admin);
  });
  afterAll(async () => {
    await browser?.close();
    await ctx?.close();
  });

  async function openCase(partner: Partner, paymentId: string, type: string, description: string): Promise<CaseView> {
    const res = await ctx.api(partner.apiKey, { method: 'POST', url: '/api/v1/cases', payload: { paymentId, type, description } });
    expect(res.statusCode, res.body).toBe(201);
    return res.json<CaseView>();
  }

  const admin = (method: 'GET' | 'POST', url: string, payload?: object) =>
    ctx.admin.inject({ method, url, payload, headers: { authorization: `Bearer ${ctx.config.adminToken}` } });

  it('queues the cases overdue first, opens one with its evidence, takes, comments on and resolves it, and the audit log has all three', async () => {
    // A paid_not_updated case the ministry has not confirmed: left past its 24 hours, it is escalated.
    const late = await partnerWithPayment(ctx, 'police');
    const lateCase = await openCase(late.partner, late.payment.id, 'paid_not_updated', 'Paid at the branch; the police still show the fine unpaid');
    // A payment the ministry confirmed and settled, which the customer says was charged twice.
    const { partner, invoice, payment } = await partnerWithPayment(ctx, 'mof');
    expect((await approve(ctx, invoice.refNum)).statusCode).toBe(200);
    await ctx.runJobs();
    const description = "Charged twice: the customer's statement shows two debits of 10 000";
    const opened = await openCase(partner, payment.id, 'paid_twice', description);
    // A paid_not_updated case the ministry confirms: the service answers it itself.
    const auto = await partnerWithPayment(ctx, 'etax');
    expect((await approve(ctx, auto.invoice.refNum)).statusCode).toBe(200);
    const autoCase = await openCase(auto.partner, auto.payment.id, 'paid_not_updated', 'Paid; the tax office shows it unpaid');
    await ctx.runJobs();
    ctx.advance(25 * HOUR_MS);
    await ctx.runJobs();

    const shown = (await admin('GET', `/admin/cases/${opened.id}`)).json<AdminCaseView>();
    const evidence = shown.evidence;
    expect(evidence).toMatchObject({ ministryStatus: { status: 'confirmed', error: null }, ministryInvoice: { found: true, error: null }, settlement: { error: null } });
    expect(evidence?.settlement.lines.map((l) => l.paymentId)).toEqual([payment.id]);
    const register = evidence?.ministryInvoice.payerRegister ?? '';
    expect(register).not.toBe('');

    const session = await openConsole(browser, baseUrl);
    const { page } = session;
    await signIn(page, ctx.config.adminToken);
    await page.click('#tab-cases');
    await page.locator('#cases-table[data-state="ready"]').waitFor();
    expect(page.url()).toMatch(/#cases$/);

    // The queue: unresolved only, the overdue one first and marked, with its due time.
    const rows = () => page.$$eval('#cases-table tr.case-row', (trs) => trs.map((tr) => (tr as HTMLElement).dataset.id));
    expect(await rows()).toEqual([lateCase.id, opened.id]);
    const lateRow = page.locator(`#cases-table tr.case-row[data-id="${lateCase.id}"]`);
    const row = page.locator(`#cases-table tr.case-row[data-id="${opened.id}"]`);
    expect(await lateRow.getAttribute('data-overdue')).toBe('true');
    expect(await lateRow.getAttribute('data-status')).toBe('escalated');
    expect(await lateRow.locator('td.time').first().locator('.badge').textContent()).toBe('overdue');
    expect(await lateRow.locator('td.time').first().locator(':scope > span').allTextContents()).toEqual(inUlaanbaatar(lateCase.dueAt).split(' '));
    expect(await row.getAttribute('data-overdue')).toBe('false');
    expect(await row.locator('.badge[data-status="overdue"]').count()).toBe(0);
    const rowText = await row.textContent();
    for (const text of ['paid_twice', 'open', shown.partnerName, payment.id.slice(0, 8), description]) expect(rowText).toContain(text);
    expect(await row.locator('td.assignee').textContent()).toBe('—');
    await page.setViewportSize({ width: 1280, height: 900 });
    await expectFits(page, '#cases-table');
    await screenshot(page, 'cases');

    // The case and its evidence, as the ministry answered when it opened.
    await row.click();
    const detail = page.locator('#case-detail[data-state="ready"]');
    await detail.waitFor();
    expect(await page.textContent('#case-description')).toBe(description);
    expect(await page.textContent('#case-comments')).toBe('No comments yet.');
    const partOf = (name: string) => page.locator(`#case-evidence .evidence-part[data-part="${name}"]`);
    expect(await partOf('payment').textContent()).toContain(invoice.refNum);
    expect(await partOf('ministry-status').locator('.badge').textContent()).toBe('confirmed');
    const invoicePart = await partOf('ministry-invoice').textContent();
    expect(invoicePart).toContain(register);
    expect(invoicePart).toContain(evidence?.ministryInvoice.status ?? '');
    expect(await page.locator('#case-evidence .part-error').count()).toBe(0);
    const line = page.locator(`#case-settlement tr.settlement-row[data-payment-id="${payment.id}"]`);
    expect(await line.textContent()).toContain('10,000.00 ₮');
    expect(await page.$$eval('#case-timeline tr.timeline-row', (trs) => trs.map((tr) => (tr as HTMLElement).dataset.to))).toEqual(['pending', 'submitted', 'confirmed']);
    expect(await page.textContent('#case-discrepancies')).toContain('No reconciliation discrepancy of this payment.');
    await expectScreenFits(page);
    await screenshot(page, 'case-evidence');

    // Take it: in progress, assigned to the operator, in the queue too.
    await page.click('#case-take');
    await page.locator('#case-detail[data-state="ready"][data-status="in_progress"]').waitFor();
    expect(await page.textContent('#notice-text')).toContain('assigned to admin');
    await page.locator(`#cases-table tr.case-row[data-id="${opened.id}"][data-status="in_progress"]`).waitFor();
    expect(await page.locator(`#cases-table tr.case-row[data-id="${opened.id}"] td.assignee`).textContent()).toBe('admin');

    // Comment: the thread shows it under the operator's name.
    const comment = 'Asked the ministry for its settlement file of the day';
    await page.fill('#case-comment-text', comment);
    await page.click('#case-comment');
    const operatorComment = page.locator('#case-comments li.comment[data-author="operator"]');
    await operatorComment.waitFor();
    expect(await operatorComment.getAttribute('data-operator')).toBe('admin');
    expect(await operatorComment.textContent()).toContain(comment);

    // Resolve: the page asks for an outcome first, then the case shows its resolution and leaves the queue.
    const note = 'The ministry settled one payment of 10 000; the second debit is the bank\'s own';
    await page.fill('#case-note', note);
    await page.click('#case-resolve');
    await expect.poll(() => page.textContent('#error')).toContain('choose the outcome');
    await page.click('#error-close');
    expect((await page.$$eval('#case-outcome option:not([disabled])', (options) => options.map((o) => (o as HTMLOptionElement).value)))).toEqual(['confirmed', 'reversed', 'refunded_by_partner', 'no_fault_found', 'other']);
    await page.selectOption('#case-outcome', 'no_fault_found');
    await page.fill('#case-reference', 'MOF-2291');
    await page.click('#case-resolve');
    await page.locator('#case-detail[data-state="ready"][data-status="resolved"]').waitFor();
    const resolution = page.locator('#case-resolution');
    expect(await resolution.getAttribute('data-outcome')).toBe('no_fault_found');
    expect(await resolution.getAttribute('data-by')).toBe('operator');
    const resolutionText = await resolution.textContent();
    for (const text of [note, 'admin', 'MOF-2291']) expect(resolutionText).toContain(text);
    expect(await page.locator('#case-actions').count()).toBe(0);
    await expect.poll(rows).toEqual([lateCase.id]);
    await screenshot(page, 'case-resolved');
    // The partner reads the same answer and the operator's comment.
    const partnerView = (await ctx.api(partner.apiKey, { method: 'GET', url: `/api/v1/cases/${opened.id}` })).json<CaseDetailView>();
    expect(partnerView).toMatchObject({ status: 'resolved', resolution: { outcome: 'no_fault_found', note, ministryReference: 'MOF-2291', by: 'operator' } });
    expect(partnerView.comments.map((c) => [c.author, c.text])).toEqual([['operator', comment]]);

    // The resolved ones: this one, and the one the service answered itself.
    await page.selectOption('#cases-status', 'resolved');
    await page.locator(`#cases-table[data-state="ready"] tr.case-row[data-id="${autoCase.id}"]`).waitFor();
    expect((await rows()).sort()).toEqual([opened.id, autoCase.id].sort());
    await page.click(`#cases-table tr.case-row[data-id="${autoCase.id}"]`);
    await page.locator(`#case-detail[data-id="${autoCase.id}"][data-state="ready"]`).waitFor();
    expect(await resolution.getAttribute('data-by')).toBe('service');
    expect(await resolution.getAttribute('data-outcome')).toBe('confirmed');
    expect(await resolution.textContent()).toContain('the ministry confirmed the payment');

    // A case answered behind the page: the refused comment is shown with its status, then the case as it now is.
    await page.selectOption('#cases-status', 'unresolved');
    await lateRow.waitFor();
    await lateRow.click();
    await page.locator(`#case-detail[data-id="${lateCase.id}"][data-state="ready"][data-status="escalated"]`).waitFor();
    expect(await page.locator('#case-detail-status .badge[data-status="overdue"]').count()).toBe(1);
    expect((await admin('POST', `/admin/cases/${lateCase.id}/resolve`, { outcome: 'other', note: 'Answered on the phone' })).statusCode).toBe(200);
    await page.fill('#case-comment-text', 'Any news?');
    await page.click('#case-comment');
    await expect.poll(() => page.textContent('#error')).toContain('HTTP 409');
    expect(await page.textContent('#error')).toContain('The case is already resolved');
    await page.locator(`#case-detail[data-id="${lateCase.id}"][data-state="ready"][data-status="resolved"]`).waitFor();
    await page.click('#error-close');

    // The audit log: each of the three actions on the case, by the operator.
    await page.click('#tab-audit');
    for (const action of ['case.take', 'case.comment', 'case.resolve']) {
      const entry = page.locator(`#audit-table tr.audit-row[data-action="${action}"][data-target-id="${opened.id}"]`);
      await entry.waitFor();
      expect(await entry.getAttribute('data-operator')).toBe('admin');
    }
    expect(await page.locator(`#audit-table tr.audit-row[data-action="case.resolve"][data-target-id="${opened.id}"] td.change`).textContent()).toMatch(/status: in_progress\s*→\s*resolved/);
    const audit = (await admin('GET', `/admin/audit?targetId=${opened.id}`)).json<{ items: { action: string; operator: string }[] }>();
    expect(audit.items.map((e) => `${e.operator}:${e.action}`).sort()).toEqual(['admin:case.comment', 'admin:case.resolve', 'admin:case.take']);

    await expectClean(session);
    await page.close();
  });
});
