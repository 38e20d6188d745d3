import { describe, expect, it } from 'vitest';
import {
  buildEmvcoPayload,
  formatEmvcoAmount,
  parseEmvcoTlv,
  transliterateMongolian,
  verifyEmvcoCrc,
  type EmvcoPayloadInput,
  type QrSchemeConfig,
} from '../../src/domain/emvco-qr.js';
import { testSchemes } from '../helpers/qr-schemes.js';

const scheme: QrSchemeConfig = testSchemes();

const base: EmvcoPayloadInput = {
  standard: 'qrpay',
  scheme,
  merchantAccount: 'GOV-MOF-01',
  amount: '12000.50',
  payeeName: 'Сангийн яам',
  city: 'ULAANBAATAR',
  billNumber: 'MOF-2025-000123',
  referenceLabel: 'PAY0001',
};

const GOLDEN_QRPAY =
  '000201' + '010212' +
  '27340016A0000009990000010110GOV-MOF-01' +
  '52049311' + '5303496' + '540712000.5' + '5802MN' +
  '5912Sangiin yaam' + '6011ULAANBAATAR' +
  '62300115MOF-2025-0001230507PAY0001' +
  '6304602E';

const GOLDEN_GOVSTD_LOCAL =
  '000201' + '010212' +
  '26280010mn.gov.pay0110GOV-MOF-01' +
  '52049311' + '5303496' + '540512000' + '5802MN' +
  '5912Sangiin yaam' + '6011ULAANBAATAR' +
  '62300115MOF-2025-0001230507PAY0001' +
  '64210002MN0111Сангийн яам' +
  '6304F463';

/** Top-level tags in payload order (parseEmvcoTlv returns a record, which reorders numeric keys). */
function tagOrder(text: string): string[] {
  const chars = Array.from(text);
  const tags: string[] = [];
  for (let at = 0; at < chars.length; at += 4 + Number(chars.slice(at + 2, at + 4).join(''))) {
    tags.push(chars.slice(at, at + 2).join(''));
  }
  return tags;
}

describe('buildEmvcoPayload', () => {
  it('builds the golden qrpay payload (tag 27)', () => {
    expect(buildEmvcoPayload(base)).toBe(GOLDEN_QRPAY);
  });

  it('builds the golden govstd payload (tag 26) with the Cyrillic language template', () => {
    const payload = buildEmvcoPayload({
      ...base,
      standard: 'govstd',
      amount: '12000',
      payeeNameLocal: 'Сангийн яам',
    });
    expect(payload).toBe(GOLDEN_GOVSTD_LOCAL);
  });

  it('golden payloads carry a valid CRC', () => {
    expect(verifyEmvcoCrc(GOLDEN_QRPAY)).toBe(true);
    expect(verifyEmvcoCrc(GOLDEN_GOVSTD_LOCAL)).toBe(true);
  });

  it('qrpay uses tag 27 with the AID, and never tag 26', () => {
    const fields = parseEmvcoTlv(buildEmvcoPayload(base));
    expect(fields['26']).toBeUndefined();
    expect(parseEmvcoTlv(fields['27'] ?? '')).toEqual({ '00': 'A000000999000001', '01': 'GOV-MOF-01' });
  });

  it('govstd uses tag 26 with the national GUID, and never tag 27', () => {
    const fields = parseEmvcoTlv(buildEmvcoPayload({ ...base, standard: 'govstd' }));
    expect(fields['27']).toBeUndefined();
    expect(parseEmvcoTlv(fields['26'] ?? '')).toEqual({ '00': 'mn.gov.pay', '01': 'GOV-MOF-01' });
  });

  it('sets the fixed fields: dynamic QR, MNT 496, country MN', () => {
    for (const standard of ['qrpay', 'govstd'] as const) {
      const fields = parseEmvcoTlv(buildEmvcoPayload({ ...base, standard }));
      expect(fields['00']).toBe('01');
      expect(fields['01']).toBe('12');
      expect(fields['53']).toBe('496');
      expect(fields['58']).toBe('MN');
      expect(fields['60']).toBe('ULAANBAATAR');
    }
  });

  it('takes the MCC from the scheme config unless the input overrides it', () => {
    expect(parseEmvcoTlv(buildEmvcoPayload(base))['52']).toBe('9311');
    expect(parseEmvcoTlv(buildEmvcoPayload({ ...base, mcc: '9399' }))['52']).toBe('9399');
    expect(() => buildEmvcoPayload({ ...base, mcc: '93' })).toThrow(/MCC/);
  });

  it('puts the bill number in 62.01 and the reference label in 62.05', () => {
    const additional = parseEmvcoTlv(parseEmvcoTlv(buildEmvcoPayload(base))['62'] ?? '');
    expect(additional).toEqual({ '01': 'MOF-2025-000123', '05': 'PAY0001' });
  });

  it('orders tags ascending with 63 (CRC) last, and omits 64 without a local name', () => {
    expect(tagOrder(GOLDEN_QRPAY)).toEqual(['00', '01', '27', '52', '53', '54', '58', '59', '60', '62', '63']);
    expect(tagOrder(GOLDEN_GOVSTD_LOCAL)).toEqual([
      '00', '01', '26', '52', '53', '54', '58', '59', '60', '62', '64', '63',
    ]);
  });

  it('counts lengths in characters, not UTF-8 bytes', () => {
    const local = parseEmvcoTlv(GOLDEN_GOVSTD_LOCAL)['64'] ?? '';
    expect(Array.from(local)).toHaveLength(21);
    expect(Buffer.byteLength(local, 'utf8')).toBeGreaterThan(21);
    expect(parseEmvcoTlv(local)).toEqual({ '00': 'MN', '01': 'Сангийн яам' });
  });

  it('transliterates the payee name into tag 59 and cuts it to 25 characters', () => {
    const payload = buildEmvcoPayload({ ...base, payeeName: 'Монгол Улсын Сангийн яамны Төрийн сан' });
    expect(parseEmvcoTlv(payload)['59']).toBe('Mongol Ulsyn Sangiin yaam');
    const local = buildEmvcoPayload({ ...base, payeeNameLocal: 'Монгол Улсын Сангийн яамны Төрийн сан' });
    expect(parseEmvcoTlv(parseEmvcoTlv(local)['64'] ?? '')['01']).toBe('Монгол Улсын Сангийн яамн');
  });

  it('cuts the city to 15 characters', () => {
    const payload = buildEmvcoPayload({ ...base, city: 'Улаанбаатар хот, Хан-Уул' });
    expect(parseEmvcoTlv(payload)['60']).toBe('Ulaanbaatar kho');
  });

  it('accepts identifiers of exactly 25 characters and rejects 26', () => {
    const max = 'B'.repeat(25);
    expect(parseEmvcoTlv(parseEmvcoTlv(buildEmvcoPayload({ ...base, billNumber: max }))['62'] ?? '')['01']).toBe(max);
    expect(() => buildEmvcoPayload({ ...base, billNumber: 'B'.repeat(26) })).toThrow(/bill number/);
    expect(() => buildEmvcoPayload({ ...base, referenceLabel: 'R'.repeat(26) })).toThrow(/reference label/);
  });

  it('rejects a merchant account template longer than 99 characters', () => {
    // 4 + 16 (AID) + 4 + 76 = 100 characters in tag 27.
    expect(() => buildEmvcoPayload({ ...base, merchantAccount: 'A'.repeat(76) })).toThrow(/merchant account is 76 characters, max 75/);
    expect(() => buildEmvcoPayload({ ...base, merchantAccount: 'A'.repeat(75) })).not.toThrow();
  });

  it('rejects identifiers outside the EMVCo common character set or empty', () => {
    expect(() => buildEmvcoPayload({ ...base, billNumber: 'НӨАТ-1' })).toThrow(/bill number/);
    expect(() => buildEmvcoPayload({ ...base, merchantAccount: '' })).toThrow(/merchant account/);
  });

  it('rejects a payee name that has nothing printable left', () => {
    expect(() => buildEmvcoPayload({ ...base, payeeName: '😀😀' })).toThrow(/payee name/);
  });
});

describe('formatEmvcoAmount', () => {
  it.each([
    ['12000', '12000'],
    ['12000.00', '12000'],
    ['12000.50', '12000.5'],
    ['12000.05', '12000.05'],
    ['0.5', '0.5'],
    ['9999999999999', '9999999999999'],
  ])('%s -> %s', (input, expected) => {
    expect(formatEmvcoAmount(input)).toBe(expected);
  });

  it.each(['0', '0.00', '-5', '012', '1.234', '1e3', '12,5', ' 12', '', '12.', '.5'])(
    'rejects %j',
    (input) => {
      expect(() => formatEmvcoAmount(input)).toThrow();
    },
  );

  it('rejects amounts longer than 13 characters', () => {
    expect(() => formatEmvcoAmount('12345678901234')).toThrow(/13 characters/);
    expect(() => formatEmvcoAmount('123456789012.5')).toThrow(/13 characters/);
  });
});

describe('transliterateMongolian', () => {
  it.each([
    ['Сангийн яам', 'Sangiin yaam'],
    ['Улаанбаатар', 'Ulaanbaatar'],
    ['Өлзий Үйлдвэр', 'Ulzii Uildver'],
    ['ХААН БАНК', 'KHAAN BANK'],
    ['Чингис хаан', 'Chingis khaan'],
    ['Цагдаагийн ерөнхий газар', 'Tsagdaagiin yerunkhii gazar'],
    ['Ёс, Юм, Шуудан, Жолооч', 'Yos, Yum, Shuudan, Jolooch'],
    ['Tax Office  №5 «Сүү»', 'Tax Office No5 Suu'],
    ['Café', 'Cafe'],
  ])('%s -> %s', (input, expected) => {
    expect(transliterateMongolian(input)).toBe(expected);
  });

  it('only ever produces the EMVCo common character set', () => {
    const all = 'абвгдеёжзийклмноөпрстуүфхцчшщъыьэюя';
    expect(transliterateMongolian(all + all.toUpperCase())).toMatch(/^[\x20-\x7E]+$/);
  });
});

describe('parseEmvcoTlv and verifyEmvcoCrc', () => {
  it('parses every top-level tag of a payload', () => {
    expect(parseEmvcoTlv(GOLDEN_QRPAY)).toEqual({
      '00': '01',
      '01': '12',
      '27': '0016A0000009990000010110GOV-MOF-01',
      '52': '9311',
      '53': '496',
      '54': '12000.5',
      '58': 'MN',
      '59': 'Sangiin yaam',
      '60': 'ULAANBAATAR',
      '62': '0115MOF-2025-0001230507PAY0001',
      '63': '602E',
    });
  });

  it('throws on truncated, malformed or duplicated data', () => {
    expect(() => parseEmvcoTlv('000201011')).toThrow();
    expect(() => parseEmvcoTlv('0002010599')).toThrow(/runs past/);
    expect(() => parseEmvcoTlv('AB0201')).toThrow(/malformed/);
    expect(() => parseEmvcoTlv('000201000201')).toThrow(/twice/);
  });

  it('detects any change to the payload', () => {
    expect(verifyEmvcoCrc(GOLDEN_QRPAY.replace('540712000.5', '540712000.9'))).toBe(false);
    expect(verifyEmvcoCrc(GOLDEN_QRPAY.slice(0, -1) + 'F')).toBe(false);
    expect(verifyEmvcoCrc(GOLDEN_QRPAY.slice(0, -8))).toBe(false);
    expect(verifyEmvcoCrc('not a payload')).toBe(false);
  });
});
