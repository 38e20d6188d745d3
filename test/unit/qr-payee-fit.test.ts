import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { BankLinkConfig } from '../../src/domain/bank-links.schema.js';
import { EmvcoPayloadError, parseEmvcoTlv, transliterateMongolian, type QrSchemeConfig } from '../../src/domain/emvco-qr.js';
import { qrPngBase64 } from '../../src/codecs/qr-png.codec.js';
import { SOURCES, type QrStandard } from '../../src/domain/vocabulary.js';
import { createQrService, type QrBuildInput } from '../../src/payments/qr.service.js';
import { createShortLinkService } from '../../src/services/short-link.service.js';
import type { ShortLinkRow } from '../../src/db/repositories/short-link.repository.js';
import { decodeQrImage, referenceCrc16, topLevelTags } from '../helpers/qr-decode.js';
import { testSchemes } from '../helpers/qr-schemes.js';
import { hostileText } from '../helpers/hostile-text.js';

/*
 * Whatever payee a ministry serves, the QR service builds a payload that scans and passes the
 * EMVCo checks: the payee id is used exactly or replaced by the ministry system's collection
 * account, the name is transliterated and cut, or replaced when nothing of it is left.
 */

const schemes: QrSchemeConfig = testSchemes();

const banks: BankLinkConfig[] = [
  { name: 'Khan Bank', description: 'Хаан банк', logo: 'https://qpay.mn/q/logo/khanbank.png', linkTemplate: 'khanbank://q?qPay_QRcode={qr}' },
];

/** Template 26/27 holds 99 characters: "00" + length + scheme id, then "01" + length + account. */
const ACCOUNT_ROOM: Record<QrStandard, number> = { qrpay: 99 - 4 - 16 - 4, govstd: 99 - 4 - 10 - 4 };
const ACCOUNT_TAG: Record<QrStandard, string> = { qrpay: '27', govstd: '26' };
const PRINTABLE_ASCII = /^[\x20-\x7E]*$/;
const INVISIBLE = /[\p{Cc}\p{Cf}\p{Cs}]/u;

const amount = fc
  .tuple(fc.integer({ min: 1, max: 9_999_999_999 }), fc.option(fc.integer({ min: 0, max: 99 }), { nil: undefined }))
  .map(([whole, cents]) => (cents === undefined ? String(whole) : `${whole}.${String(cents).padStart(2, '0')}`));

const buildInput: fc.Arbitrary<QrBuildInput> = fc.record({
  standard: fc.constantFrom<QrStandard>('qrpay', 'govstd'),
  source: fc.constantFrom(...SOURCES),
  paymentId: fc.uuid(),
  amount,
  payeeId: hostileText,
  payeeName: hostileText,
  billNumber: fc.constant('0B8F4A3E5C1D4E2F9A7B3C6D5'),
});

/** The EMVCo checks a scanner makes, written here without the service's own parser. */
function expectValidEmvco(text: string): Map<string, string> {
  expect(text.slice(-8, -4)).toBe('6304');
  expect(text.slice(-4)).toBe(referenceCrc16(text.slice(0, -4)));
  const tags = topLevelTags(text);
  // Every TLV's length matched its value: re-encoding the tags gives back the payload.
  expect([...tags].map(([tag, value]) => tag + String([...value].length).padStart(2, '0') + value).join('')).toBe(text);
  for (const value of tags.values()) expect([...value].length).toBeLessThanOrEqual(99);
  expect(text).not.toMatch(INVISIBLE);
  const name = tags.get('59') ?? '';
  expect(name).toMatch(/^[\x21-\x7E]([\x20-\x7E]{0,23}[\x21-\x7E])?$/);
  return tags;
}

describe('QR payload for any payee a ministry serves', () => {
  const service = createQrService({ banks, schemes, shortUrlBase: 'https://pay.gov.mn/p' });

  it('always builds a payload that scans and passes the EMVCo checks (property, 300 cases)', () => {
    fc.assert(
      fc.property(buildInput, (input) => {
        const qr = service.forPayment(null, input);
        const tags = expectValidEmvco(qr.qrText);
        const template = parseEmvcoTlv(tags.get(ACCOUNT_TAG[input.standard]) ?? '');
        const prefix = schemes[input.standard].merchantAccountPrefix;
        const own = prefix + input.payeeId;
        const carried = /^\S(.*\S)?$/.test(input.payeeId) && PRINTABLE_ASCII.test(own) && own.length <= ACCOUNT_ROOM[input.standard];
        expect(template['01']).toBe(carried ? own : prefix + schemes.fallbackPayees[input.source].merchantId);
        if (transliterateMongolian(input.payeeName) === '') expect(tags.get('59')).toBe(schemes.fallbackPayees[input.source].name);
        const local = tags.get('64');
        if (local !== undefined) expect([...(parseEmvcoTlv(local)['01'] ?? '')].length).toBeLessThanOrEqual(25);
        expect(decodeQrImage(qr.qrImage)).toBe(qr.qrText);
      }),
      { numRuns: 300 },
    );
    // Drawing and decoding 300 PNGs is CPU work: a busy machine slows it, nothing else does.
  }, 120_000);

  it('uses a payee id exactly as given when it fits, and never a shortened or transliterated one', () => {
    const base = { standard: 'govstd' as const, source: 'etax' as const, paymentId: '0b8f4a3e-5c1d-4e2f-9a7b-3c6d5e4f1a2b', amount: '1000', payeeName: 'Татвар', billNumber: 'B1' };
    const account = (payeeId: string) => parseEmvcoTlv(parseEmvcoTlv(service.payload({ ...base, payeeId }))['26'] ?? '')['01'];
    expect(account('ORG-200')).toBe('ORG-200');
    expect(account('A'.repeat(81))).toBe('A'.repeat(81));
    expect(account('A'.repeat(82))).toBe('GOV-ETAX-TREASURY');
    expect(account('ГОВ-1')).toBe('GOV-ETAX-TREASURY');
    expect(account('')).toBe('GOV-ETAX-TREASURY');
    expect(account(' ORG-200')).toBe('GOV-ETAX-TREASURY');
    expect(account('ORG 200')).toBe('ORG 200');
    expect(account('ORG\u0001200')).toBe('GOV-ETAX-TREASURY');
  });

  it('names the ministry system when nothing of the payee name survives, and keeps the symbols only in tag 64', () => {
    const fields = parseEmvcoTlv(service.payload({ standard: 'qrpay', source: 'police', paymentId: 'PAY-1', amount: '5', payeeId: 'ORG-300', payeeName: '✓✓', billNumber: 'B1' }));
    expect(fields['59']).toBe('National Police Agency');
    expect(parseEmvcoTlv(fields['64'] ?? '')['01']).toBe('✓✓');
    const controls = parseEmvcoTlv(service.payload({ standard: 'qrpay', source: 'police', paymentId: 'PAY-1', amount: '5', payeeId: 'ORG-300', payeeName: '\u0000\u0007Цагдаа\u202e', billNumber: 'B1' }));
    expect(controls['59']).toBe('Tsagdaa');
    expect(parseEmvcoTlv(controls['64'] ?? '')['01']).toBe('Цагдаа');
  });

  it('refuses only what no fitting can carry: an amount over 13 characters', () => {
    const input = { standard: 'qrpay' as const, source: 'mof' as const, paymentId: 'PAY-1', payeeId: 'ГОВ-1', payeeName: '✓✓', billNumber: 'B1' };
    expect(() => service.payload({ ...input, amount: '9999999999.99' })).not.toThrow();
    expect(() => service.payload({ ...input, amount: '99999999999.99' })).toThrow(EmvcoPayloadError);
  });

  it('refuses at start a fallback merchant id that a merchant account cannot carry', () => {
    const tooLong = { ...schemes, fallbackPayees: { ...schemes.fallbackPayees, police: { merchantId: 'P'.repeat(80), name: 'Police' } } };
    expect(() => createQrService({ banks, schemes: tooLong, shortUrlBase: 'https://pay.gov.mn/p' })).toThrow(/police fallback/);
  });
});

describe('QR image cache', () => {
  const PAYMENT_ID = '0b8f4a3e-5c1d-4e2f-9a7b-3c6d5e4f1a2b';

  function countingService(imageCacheSize?: number) {
    const drawn: string[] = [];
    const renderPng = (text: string) => {
      drawn.push(text);
      return qrPngBase64(text);
    };
    return { drawn, qr: createQrService({ banks, schemes, shortUrlBase: 'https://pay.gov.mn/p', renderPng, imageCacheSize }) };
  }

  it('draws a payment\'s image once however often its landing page is opened', async () => {
    const { drawn, qr } = countingService();
    const row: ShortLinkRow = {
      id: PAYMENT_ID,
      status: 'submitted',
      status_event: 'ministry_accepted',
      amount: '1000.00',
      payee_id: 'ORG-100',
      payee_name: 'Сангийн яам',
      description: 'Төлбөр',
      qr_text: null,
      source: 'mof',
      qr_standard: 'qrpay',
      paid_at: null,
      partner_reference: null,
    };
    const page = createShortLinkService({ links: { findPage: async () => row, findStatus: async () => null, findReceipt: async () => null }, qr });
    const views = await Promise.all(Array.from({ length: 20 }, () => page.page(PAYMENT_ID)));
    const images = new Set(views.map((v) => v?.qr?.qrImage));
    expect(images.size).toBe(1);
    expect(drawn).toHaveLength(1);
  });

  it('keeps a bounded number of images and draws an evicted one again', () => {
    const { drawn, qr } = countingService(2);
    for (const text of ['A', 'B', 'C', 'A']) qr.present(PAYMENT_ID, text);
    expect(drawn).toEqual(['A', 'B', 'C', 'A']);
    qr.present(PAYMENT_ID, 'A');
    expect(drawn).toHaveLength(4);
  });
});
