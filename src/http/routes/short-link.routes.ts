import type { FastifyReply } from 'fastify';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { ErrorBody } from '../../schemas/common.schema.js';
import { ShortLinkParams, ShortLinkStatusBody } from '../../schemas/short-link.schema.js';
import type { ShortLinkService, ShortLinkView } from '../../services/short-link.service.js';
import { DATABASE_RETRY_AFTER_SECONDS, sendError } from '../plugins/errors.plugin.js';
import { limitPerAddress, sendRefusal, type Refusal } from '../plugins/rate-limit.plugin.js';
import type { RateLimitService } from '../../services/rate-limit/rate-limit.service.js';
import { redactDbError } from '../db-error.redactor.js';
import { contentSecurityPolicy, fillTemplate, loadPageTemplate, sendPage, type PageTemplate } from '../plugins/page-security.plugin.js';
import { pageScript } from '../page-script.bundler.js';
import { isDatabaseUnavailable } from '../../db/pg-error.js';
import { mongolianLocalTime } from '../../domain/finance-day.js';

/*
 * The QR landing page behind `qrpay.shortUrl` (`SHORT_URL_BASE/<paymentId>`): served at
 * `/q/{paymentId}` on the partner listener, outside `/api/v1`, with no API key (the customer
 * opening it has none), so both routes are limited per client address instead
 * (SHORT_LINK_RATE_LIMIT_PER_MINUTE). The random payment id is the capability; the page and its
 * status poll only read (see services/short-link.service.ts). SHORT_URL_BASE must point at where
 * this service's `/q` is reachable.
 */

/** Read once at start-up: self-contained pages (inline CSS and JS by hash, nothing from any other host). */
const PAGE_MARKUP = loadPageTemplate(new URL('../short-link/short-link.page.html', import.meta.url)).html;
const MESSAGE = loadPageTemplate(new URL('../short-link/short-link.message.html', import.meta.url));
const RECEIPT = loadPageTemplate(new URL('../short-link/short-link.receipt.html', import.meta.url));

let page: PageTemplate | undefined;

/** The page with its script (short-link/short-link.page.ts, bundled) inline, and a policy allowing that script by its hash. */
async function landingPage(): Promise<PageTemplate> {
  if (!page) {
    const html = fillTemplate(PAGE_MARKUP, { SCRIPT: (await pageScript('short-link')).code });
    page = { html, csp: contentSecurityPolicy(html) };
  }
  return page;
}

const HTML_ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };
const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (c) => HTML_ESCAPES[c] ?? c);

/** "1234567.5" -> "1,234,567.50 ₮" (the decimal text as stored: no float on the way). */
export function formatTugrik(amount: string): string {
  const [whole = '0', fraction] = amount.split('.');
  const grouped = whole.replace(/\B(?=(\d{3})+(?!\d))/g, ',');
  return `${grouped}${fraction ? `.${fraction.padEnd(2, '0')}` : ''}\u00a0₮`;
}

function renderPay(qr: NonNullable<ShortLinkView['qr']>): string {
  const banks = qr.urls
    .map((bank) => {
      // A letter badge, not the configured logo: those are remote URLs and the page loads nothing from other hosts.
      const initial = [...bank.description.trim()][0]?.toUpperCase() ?? [...bank.name][0] ?? '?';
      return (
        `<li><a class="bank" href="${escapeHtml(bank.link)}" rel="noopener noreferrer">` +
        `<span class="logo" aria-hidden="true">${escapeHtml(initial)}</span>` +
        `<span class="names"><span class="name">${escapeHtml(bank.description || bank.name)}</span>` +
        `<span class="alt">${escapeHtml(bank.name)}</span></span></a></li>`
      );
    })
    .join('\n      ');
  return `<div id="pay">
  <section class="card qr">
    <h2>QR кодоор төлөх<small>Scan with any bank app</small></h2>
    <img id="qr-img" src="data:image/png;base64,${qr.qrImage}" alt="Төлбөрийн QR код" width="232" height="232">
  </section>
  <section class="card banks">
    <h2>Банкны аппаар төлөх<small>Pay in your bank app</small></h2>
    <ul id="banks">
      ${banks}
    </ul>
  </section>
  </div>`;
}

/** A confirmed payment's facts on its landing page, in both languages: what the customer shows a clerk. */
function renderPaid(view: ShortLinkView, paid: NonNullable<ShortLinkView['paid']>): string {
  const reference = paid.partnerReference
    ? `<div><dt>Банкны гүйлгээний дугаар · <small>Bank reference</small></dt><dd id="bank-reference">${escapeHtml(paid.partnerReference)}</dd></div>`
    : '';
  return `<section class="card paid-facts" aria-label="Төлбөрийн баримт">
    <h2>Төлбөрийн баримт<small>Receipt</small></h2>
    <dl>
      <div><dt>Төлсөн огноо · <small>Paid at (UTC+8)</small></dt><dd id="paid-at">${escapeHtml(mongolianLocalTime(paid.paidAt))}</dd></div>
      <div><dt>Дүн · <small>Amount</small></dt><dd id="paid-amount">${escapeHtml(formatTugrik(view.amount))}</dd></div>
      <div><dt>Хүлээн авагч · <small>Payee</small></dt><dd id="paid-payee">${escapeHtml(view.payeeName)}</dd></div>
      <div><dt>Төлбөрийн дугаар · <small>Payment id</small></dt><dd class="id" id="payment-id">${escapeHtml(view.paymentId)}</dd></div>
      ${reference}
    </dl>
  </section>`;
}

const receiptRow = (id: string, mn: string, en: string, value: string) => `<tr><th>${mn}<small>${en}</small></th><td id="${id}">${escapeHtml(value)}</td></tr>`;

function sendNotFound(reply: FastifyReply) {
  return sendPage(reply, 404, MESSAGE, {
    CODE: '404',
    TITLE: 'Төлбөр олдсонгүй',
    MESSAGE: 'Холбоос буруу эсвэл хүчингүй байна.',
    MESSAGE_EN: 'Payment not found: the link is wrong or no longer valid.',
  });
}

/** The page a refused request gets, like its 404: in the customer's words, with Retry-After. */
function sendPageRefusal(reply: FastifyReply, refusal: Refusal) {
  reply.header('retry-after', String(refusal.retryAfterSeconds));
  const busy = refusal.statusCode === 429;
  return sendPage(reply, refusal.statusCode, MESSAGE, {
    CODE: String(refusal.statusCode),
    TITLE: busy ? 'Хэт олон хүсэлт' : 'Түр алдаа гарлаа',
    MESSAGE: 'Хэсэг хугацааны дараа дахин оролдоно уу.',
    MESSAGE_EN: busy ? 'Too many requests from this address; please try again shortly.' : 'Something went wrong; please try again shortly.',
  });
}

/** Registered at the root with prefix `/q`, outside the API's authenticated, per-key-limited scope. */
export const shortLinkRoutes: FastifyPluginAsyncTypebox<{ shortLinks: ShortLinkService; limiter: RateLimitService }> = async (app, opts) => {
  const limitPage = limitPerAddress(opts.limiter, sendPageRefusal);
  const limitPoll = limitPerAddress(opts.limiter, (reply, refusal) => sendRefusal(reply.header('cache-control', 'no-store'), refusal));

  // Any other path under /q is a page someone opened too: the HTML 404, not the API's JSON.
  app.setNotFoundHandler((_request, reply) => sendNotFound(reply));

  const pagePlugin: FastifyPluginAsyncTypebox = async (pages) => {
    pages.setErrorHandler((err, request, reply) => {
      // The database away is a 503 the customer can retry, as on the API; anything else is ours.
      const away = isDatabaseUnavailable(err);
      if (away) reply.header('retry-after', String(DATABASE_RETRY_AFTER_SECONDS));
      else request.log.error({ err: redactDbError(err) }, 'QR landing page failed');
      return sendPage(reply, away ? 503 : 500, MESSAGE, {
        CODE: away ? '503' : '500',
        TITLE: 'Түр алдаа гарлаа',
        MESSAGE: 'Хэсэг хугацааны дараа дахин оролдоно уу.',
        MESSAGE_EN: 'Something went wrong; please try again shortly.',
      });
    });

    // attachValidation: a path parameter the validator refuses is an unknown payment, not a 400.
    pages.get('/:paymentId', { schema: { hide: true, params: ShortLinkParams }, attachValidation: true, onRequest: limitPage }, async (request, reply) => {
      const view = request.validationError ? null : await opts.shortLinks.page(request.params.paymentId);
      if (!view) return sendNotFound(reply);
      return sendPage(reply, 200, await landingPage(), {
        STATUS: view.status,
        AMOUNT: escapeHtml(formatTugrik(view.amount)),
        PAYEE: escapeHtml(view.payeeName),
        DESCRIPTION: escapeHtml(view.description),
        PAY: view.qr ? renderPay(view.qr) : '',
        PAID: view.paid ? renderPaid(view, view.paid) : '',
        PAYMENT_ID: escapeHtml(view.paymentId),
      });
    });

    // A printable receipt (one A4 page) of a confirmed payment; any other payment has none yet.
    pages.get('/:paymentId/receipt', { schema: { hide: true, params: ShortLinkParams }, attachValidation: true, onRequest: limitPage }, async (request, reply) => {
      const receipt = request.validationError ? null : await opts.shortLinks.receipt(request.params.paymentId);
      if (!receipt) return sendNotFound(reply);
      return sendPage(reply, 200, RECEIPT, {
        AMOUNT: escapeHtml(formatTugrik(receipt.amount)),
        PAID_AT: escapeHtml(mongolianLocalTime(receipt.paidAt)),
        PAYEE: escapeHtml(receipt.payeeName),
        DESCRIPTION: escapeHtml(receipt.description),
        PAYMENT_ID: escapeHtml(receipt.paymentId),
        PAYER: receipt.payerRegister ? receiptRow('payer-register', 'Төлөгчийн регистр', 'Payer register (masked)', receipt.payerRegister) : '',
        REFERENCE: receipt.partnerReference ? receiptRow('bank-reference', 'Банкны гүйлгээний дугаар', 'Bank reference', receipt.partnerReference) : '',
      });
    });
  };
  await app.register(pagePlugin);

  app.get(
    '/:paymentId/status',
    {
      schema: { hide: true, params: ShortLinkParams, response: { 200: ShortLinkStatusBody, 404: ErrorBody, 429: ErrorBody, 503: ErrorBody } },
      attachValidation: true,
      onRequest: limitPoll,
    },
    async (request, reply) => {
      const body = request.validationError ? null : await opts.shortLinks.status(request.params.paymentId);
      reply.header('cache-control', 'no-store').header('x-content-type-options', 'nosniff');
      if (!body) return sendError(reply, 'not_found', 'Payment not found');
      return body;
    },
  );
};
