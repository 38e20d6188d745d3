import fc from 'fast-check';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestContext, type TestContext } from '../helpers/test-context.js';
import { decodeQrImage, referenceCrc16, topLevelTags } from '../helpers/qr-decode.js';
import { ownInvoice, partnerWithInvoice, pay, payOk, type PaymentCreated } from '../helpers/api.js';
import { hostileText } from '../helpers/hostile-text.js';
import type { InvoiceFixture } from '../../simulator/fixtures.schema.js';
import { loadQrSchemeConfig } from '../../src/adapters/qr-config.loader.js';
import type { QrSchemeConfig } from '../../src/domain/emvco-qr.js';

/*
 * The QR of a payment: built from whatever payee the ministry serves, before the ministry is asked,
 * and fixed at creation for the 201, an idempotent replay and the landing page /q/{id}.
 */

let ctx: TestContext;
let schemes: QrSchemeConfig;

beforeAll(async () => {
  ctx = await createTestContext();
  schemes = await loadQrSchemeConfig();
});
afterAll(() => ctx.close());

type Source = InvoiceFixture['source'];

/** The scanner's checks: CRC, every TLV length, the ASCII name, the merchant account template. */
function expectScannable(qrpay: NonNullable<PaymentCreated['qrpay']>): Map<string, string> {
  const text = qrpay.qrText;
  expect(decodeQrImage(qrpay.qrImage)).toBe(text);
  expect(text.slice(-8, -4)).toBe('6304');
  expect(text.slice(-4)).toBe(referenceCrc16(text.slice(0, -4)));
  const tags = topLevelTags(text);
  expect([...tags].map(([tag, value]) => tag + String([...value].length).padStart(2, '0') + value).join('')).toBe(text);
  for (const value of tags.values()) expect([...value].length).toBeLessThanOrEqual(99);
  expect(tags.get('59')).toMatch(/^[\x21-\x7E]([\x20-\x7E]{0,23}[\x21-\x7E])?$/);
  expect(text).not.toMatch(/[\p{Cc}\p{Cf}\p{Cs}]/u);
  return tags;
}

const accountOf = (tags: Map<string, string>) => topLevelTags(tags.get('27') ?? '').get('01');

async function landingQrImage(paymentId: string): Promise<string | undefined> {
  const res = await ctx.app.inject({ method: 'GET', url: `/q/${paymentId}` });
  expect(res.statusCode, res.body).toBe(200);
  return /<img[^>]*src="data:image\/png;base64,([A-Za-z0-9+/=]+)"/.exec(res.body)?.[1];
}

async function simulatorPaymentsFor(refNum: string): Promise<unknown[]> {
  const res = await ctx.simulator.inject({ method: 'GET', url: '/__control/payments' });
  return res.json<{ payments: { refNum: string }[] }>().payments.filter((p) => p.refNum === refNum);
}

const HOSTILE: { what: string; source: Source; payee: InvoiceFixture['payee']; carried: boolean; name?: string }[] = [
  { what: 'a Cyrillic payee id', source: 'mof', payee: { id: 'ГОВ-1', name: 'Сангийн яам' }, carried: false },
  { what: 'a 120-character payee id', source: 'etax', payee: { id: 'X'.repeat(120), name: 'Татварын газар' }, carried: false },
  { what: 'a payee name of symbols only', source: 'police', payee: { id: 'ORG-300', name: '✓✓' }, carried: true, name: 'National Police Agency' },
  { what: 'an empty payee id and name', source: 'mof', payee: { id: '', name: '' }, carried: false, name: 'Ministry of Finance' },
  { what: 'control characters and NUL', source: 'etax', payee: { id: 'ORG\u0000\u0007200', name: '\u0001Татвар\u0000\u007f\u202e' }, carried: false, name: 'Tatvar' },
  { what: 'an unpaired surrogate and a 200-character name', source: 'police', payee: { id: 'ORG-300\ud800', name: 'Цагдаа '.repeat(30) }, carried: false },
];

describe('payees the QR cannot carry as served', () => {
  it.each(HOSTILE)('$source, $what: 201 with a scannable QR, the same on replay and on /q', async ({ source, payee, carried, name }) => {
    const { partner, invoice } = await partnerWithInvoice(ctx, source, { payee });
    const headers = { 'x-idempotency-key': `fit-${invoice.refNum}` };
    const res = await pay(ctx, partner.apiKey, { invoiceId: invoice.id }, headers);
    expect(res.statusCode, res.body).toBe(201);
    const created = res.json<PaymentCreated>();
    if (!created.qrpay) throw new Error('no qrpay in the 201');
    const tags = expectScannable(created.qrpay);
    const prefix = schemes.qrpay.merchantAccountPrefix;
    expect(accountOf(tags)).toBe(prefix + (carried ? payee.id : schemes.fallbackPayees[source].merchantId));
    if (name !== undefined) expect(tags.get('59')).toBe(name);

    const replay = await pay(ctx, partner.apiKey, { invoiceId: invoice.id }, headers);
    expect(replay.statusCode).toBe(201);
    expect(replay.json<PaymentCreated>().qrpay).toEqual(created.qrpay);
    expect(await landingQrImage(created.id)).toBe(created.qrpay.qrImage);
  });

  it('stores ministry text holding NUL or an unpaired surrogate, shown as U+FFFD', async () => {
    const { partner, invoice } = await partnerWithInvoice(ctx, 'mof', { description: 'Төлбөр\u0000\udc00', payee: { id: 'ORG-100', name: 'Сан\u0000гийн яам' } });
    const res = await ctx.api(partner.apiKey, { method: 'GET', url: `/api/v1/invoices/${invoice.id}` });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({ description: 'Төлбөр\ufffd\ufffd', payee: { id: 'ORG-100', name: 'Сан\ufffdгийн яам' } });
  });

  it('refuses with 422 an amount no EMVCo QR can carry, before the ministry is asked', async () => {
    const { partner, invoice } = await partnerWithInvoice(ctx, 'mof', { amount: 12345678901234 });
    for (let attempt = 0; attempt < 2; attempt++) {
      const res = await pay(ctx, partner.apiKey, { invoiceId: invoice.id }, { 'x-idempotency-key': `big-${invoice.refNum}` });
      expect(res.statusCode, res.body).toBe(422);
      expect(res.json()).toMatchObject({ success: false, refNum: invoice.refNum });
      expect(res.json<{ message: string }>().message).toMatch(/EMVCo QR/);
    }
    expect(await simulatorPaymentsFor(invoice.refNum)).toEqual([]);
    const stored = await ctx.deps.db.selectFrom('payments').select('id').where('invoice_id', '=', invoice.id).execute();
    expect(stored).toEqual([]);
  });
});

describe('any payee the simulator serves (property)', () => {
  it('answers every payment 201 with a scannable QR carrying the payee or its fallback (200 cases)', async () => {
    const partner = await ctx.partner();
    const sources = fc.constantFrom<Source>('mof', 'etax', 'police');
    await fc.assert(
      fc.asyncProperty(sources, hostileText, hostileText, async (source, id, name) => {
        const invoice = await ownInvoice(ctx, partner, source, { payee: { id, name } });
        const res = await pay(ctx, partner.apiKey, { invoiceId: invoice.id });
        expect(res.statusCode, res.body).toBe(201);
        const { qrpay } = res.json<PaymentCreated>();
        const account = accountOf(expectScannable(qrpay));
        const prefix = schemes.qrpay.merchantAccountPrefix;
        expect([prefix + id, prefix + schemes.fallbackPayees[source].merchantId]).toContain(account);
      }),
      { numRuns: 200 },
    );
    // 200 payments, each planted, looked up, paid and its PNG decoded: bounded, but slow on a busy machine.
  }, 120_000);
});

describe('a payment\'s QR is fixed at creation', () => {
  it('keeps the tag-27 QR on replay and /q after the partner is switched to govstd', async () => {
    const { partner, invoice } = await partnerWithInvoice(ctx, 'etax', {}, { qrStandard: 'qrpay' });
    const headers = { 'x-idempotency-key': `fixed-${invoice.refNum}` };
    const created = await payOk(ctx, partner.apiKey, { invoiceId: invoice.id }, headers);
    if (!created.qrpay) throw new Error('no qrpay in the 201');
    expect(topLevelTags(created.qrpay.qrText).has('27')).toBe(true);

    const switched = await ctx.admin.inject({
      method: 'PATCH',
      url: `/admin/partners/${partner.id}`,
      headers: { authorization: `Bearer ${ctx.config.adminToken}` },
      payload: { qrStandard: 'govstd' },
    });
    expect(switched.statusCode, switched.body).toBe(200);

    expect(await landingQrImage(created.id)).toBe(created.qrpay.qrImage);
    const replay = await pay(ctx, partner.apiKey, { invoiceId: invoice.id }, headers);
    expect(replay.json<PaymentCreated>().qrpay).toEqual(created.qrpay);
    // The switch itself took effect: a new payment gets the tag-26 QR.
    const { invoice: next } = await partnerWithInvoice(ctx, 'etax');
    const other = await ctx.api(partner.apiKey, { method: 'GET', url: `/api/v1/invoices/ref/${next.refNum}` });
    const fresh = await payOk(ctx, partner.apiKey, { invoiceId: other.json<{ id: string }>().id });
    expect(topLevelTags(fresh.qrpay?.qrText ?? '').has('26')).toBe(true);
  });

  it('shows a payment stored without its payload with the QR its inputs give', async () => {
    const { partner, invoice } = await partnerWithInvoice(ctx, 'police');
    const created = await payOk(ctx, partner.apiKey, { invoiceId: invoice.id });
    await sql`UPDATE payments SET qr_text = NULL WHERE id = ${created.id}::uuid`.execute(ctx.deps.db);
    expect(await landingQrImage(created.id)).toBe(created.qrpay?.qrImage);
  });
});
