/* Driving the operator console in headless Chromium: a session on it, signing in, and what every screen must hold to. */

import { mkdirSync } from 'node:fs';
import { expect } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { ARTIFACTS } from './browser.js';

/** Ulaanbaatar is UTC+8 all year: the page's local times are then the finance day's clock. */
export const TIMEZONE = 'Asia/Ulaanbaatar';

export interface Session {
  page: Page;
  /** Every URL the page asked for, before routing. */
  requests: string[];
  pageErrors: string[];
  /** Console messages about the Content-Security-Policy (a blocked inline script or style, a blocked host). */
  cspViolations: string[];
}

/** The console, talking only to the service under test, with script errors and CSP reports recorded. */
export async function openConsole(browser: Browser, baseUrl: string, timezoneId = TIMEZONE): Promise<Session> {
  const page = await browser.newPage({ viewport: { width: 1440, height: 900 }, timezoneId });
  // Under vitest's 20 s test timeout, so a step that never happens fails on its own line.
  page.setDefaultTimeout(8000);
  const session: Session = { page, requests: [], pageErrors: [], cspViolations: [] };
  page.on('request', (req) => session.requests.push(req.url()));
  await page.route('**/*', (route) => (route.request().url().startsWith(`${baseUrl}/`) ? route.continue() : route.abort()));
  page.on('pageerror', (err) => session.pageErrors.push(err.message));
  page.on('console', (msg) => {
    if (/Content[- ]Security[- ]Policy/i.test(msg.text())) session.cspViolations.push(msg.text());
  });
  const res = await page.goto(`${baseUrl}/`);
  expect(res?.status()).toBe(200);
  return session;
}

export async function signIn(page: Page, token: string): Promise<void> {
  await page.fill('#token', token);
  await page.click('#sign-in');
  await page.locator('#tab-partners').waitFor({ state: 'visible' });
}

export async function screenshot(page: Page, name: string): Promise<void> {
  mkdirSync(ARTIFACTS, { recursive: true });
  await page.screenshot({ path: `${ARTIFACTS}/console-${name}.png`, fullPage: true });
}

/** What the page should show for an instant: YYYY-MM-DD HH:mm:ss in UTC+8. */
export const inUlaanbaatar = (iso: string) => new Date(new Date(iso).getTime() + 8 * 3600_000).toISOString().slice(0, 19).replace('T', ' ');

/** Every time cell of the page reads as its instant in local (UTC+8) time. */
export async function expectLocalTimes(page: Page): Promise<void> {
  const cells = await page.$$eval('td.time[title]', (tds) => tds.filter((td) => (td as HTMLElement).offsetParent !== null).map((td) => [td.getAttribute('title') ?? '', td.textContent ?? '']));
  expect(cells.length).toBeGreaterThan(0);
  for (const [iso, text] of cells) expect(text).toBe(inUlaanbaatar(iso ?? ''));
}

/** At a laptop's width: the table scrolls nothing sideways, its last column is in view, and neither does the page. */
export async function expectFits(page: Page, table: string): Promise<void> {
  const fit = await page.$eval(table, (t) => {
    const wrap = t.parentElement as HTMLElement;
    const lastHeader = t.querySelector('thead th:last-child') as HTMLElement;
    const root = document.documentElement;
    return {
      overflow: wrap.scrollWidth - wrap.clientWidth,
      lastRight: lastHeader.getBoundingClientRect().right,
      wrapRight: wrap.getBoundingClientRect().right,
      pageOverflow: root.scrollWidth - root.clientWidth,
    };
  });
  expect(fit.overflow, table).toBeLessThanOrEqual(0);
  expect(fit.lastRight, table).toBeLessThanOrEqual(fit.wrapRight + 1);
  expect(fit.pageOverflow, table).toBeLessThanOrEqual(0);
}

export async function expectClean(session: Session): Promise<void> {
  expect(session.pageErrors).toEqual([]);
  expect(session.cspViolations).toEqual([]);
  expect(await session.page.isVisible('#error')).toBe(false);
}
