import { describe, expect, it } from 'vitest';
import type { BankLinkConfig } from '../../src/domain/bank-links.schema.js';
import { parseEmvcoTlv, verifyEmvcoCrc, type QrSchemeConfig } from '../../src/domain/emvco-qr.js';
import { createQrService, referenceLabelFor } from '../../src/payments/qr.service.js';
import { testSchemes } from '../helpers/qr-schemes.js';

const schemes: QrSchemeConfig = testSchemes();

const banks: BankLinkConfig[] = [
  { name: 'Khan Bank', description: 'Хаан банк', logo: 'https://qpay.mn/q/logo/khanbank.png', linkTemplate: 'khanbank://q?qPay_QRcode={qr}' },
  { name: 'Toki', description: 'Токи апп', logo: 'https://qpay.mn/q/logo/toki.png', linkTemplate: 'toki://q?qPay_QRcode={qr}' },
];

const PAYMENT_ID = '0b8f4a3e-5c1d-4e2f-9a7b-3c6d5e4f1a2b';
const input = {
  source: 'mof' as const,
  paymentId: PAYMENT_ID,
  amount: '15000',
  payeeId: 'GOV-MOF-01',
  payeeName: 'Сангийн яам',
  billNumber: 'MOF-2025-000123',
};

const service = createQrService({ banks, schemes, shortUrlBase: 'https://pay.gov.mn/p' });

describe('createQrService().forPayment', () => {
  it('builds the qrpay object: payload, PNG, short URL and one link per bank', () => {
    const qr = service.forPayment(null, { ...input, standard: 'qrpay' });
    expect(verifyEmvcoCrc(qr.qrText)).toBe(true);
    expect(Buffer.from(qr.qrImage, 'base64').subarray(1, 4).toString('latin1')).toBe('PNG');
    expect(qr.shortUrl).toBe(`https://pay.gov.mn/p/${PAYMENT_ID}`);
    expect(qr.urls.map((u) => u.name)).toEqual(['Khan Bank', 'Toki']);
    expect(qr.urls[0]?.link).toBe(`khanbank://q?qPay_QRcode=${encodeURIComponent(qr.qrText)}`);
  });

  it('derives the merchant account from the payee id with the standard prefix', () => {
    const qrpay = parseEmvcoTlv(service.forPayment(null, { ...input, standard: 'qrpay' }).qrText);
    const govstd = parseEmvcoTlv(service.forPayment(null, { ...input, standard: 'govstd' }).qrText);
    expect(parseEmvcoTlv(qrpay['27'] ?? '')['01']).toBe('MN-GOV-MOF-01');
    expect(parseEmvcoTlv(govstd['26'] ?? '')['01']).toBe('GOV-MOF-01');
    expect(qrpay['26']).toBeUndefined();
    expect(govstd['27']).toBeUndefined();
  });

  it('writes the amount, bill number, reference label and both names', () => {
    const fields = parseEmvcoTlv(service.forPayment(null, { ...input, standard: 'govstd', amount: '15000.50' }).qrText);
    expect(fields['54']).toBe('15000.5');
    expect(fields['59']).toBe('Sangiin yaam');
    expect(fields['60']).toBe('ULAANBAATAR');
    expect(parseEmvcoTlv(fields['62'] ?? '')).toEqual({ '01': 'MOF-2025-000123', '05': referenceLabelFor(PAYMENT_ID) });
    expect(parseEmvcoTlv(fields['64'] ?? '')).toEqual({ '00': 'MN', '01': 'Сангийн яам' });
  });

  it('leaves out the language template when the payee name is already Latin', () => {
    const fields = parseEmvcoTlv(service.forPayment(null, { ...input, standard: 'qrpay', payeeName: 'Tax Office' }).qrText);
    expect(fields['59']).toBe('Tax Office');
    expect(fields['64']).toBeUndefined();
  });

  it('refuses an unusable short URL base at creation', () => {
    expect(() => createQrService({ banks, schemes, shortUrlBase: 'ftp://x' })).toThrow();
  });
});

describe('referenceLabelFor', () => {
  it('writes a UUID as 25 base-36 characters that convert back to the same UUID', () => {
    const label = referenceLabelFor(PAYMENT_ID);
    expect(label).toMatch(/^[0-9A-Z]{25}$/);
    const digits = [...label.toLowerCase()].reduce((n, ch) => n * 36n + BigInt(parseInt(ch, 36)), 0n);
    expect(digits.toString(16).padStart(32, '0')).toBe(PAYMENT_ID.replace(/-/g, ''));
    expect(referenceLabelFor('ffffffff-ffff-ffff-ffff-ffffffffffff')).toHaveLength(25);
  });

  it('keeps a non-UUID id as it is', () => {
    expect(referenceLabelFor('PAY-42')).toBe('PAY-42');
  });
});
