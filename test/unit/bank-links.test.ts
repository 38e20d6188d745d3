import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Value } from 'typebox/value';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildBankLinks, buildShortUrl } from '../../src/domain/bank-links.js';
import { BankLinkConfigSchema, BanksFileSchema, type BankLinkConfig } from '../../src/domain/bank-links.schema.js';
import { QrSchemeConfigSchema } from '../../src/domain/emvco-qr.js';
import {
  loadBankLinksConfig,
  loadQrConfig,
  loadQrSchemeConfig,
  QrConfigError,
} from '../../src/adapters/qr-config.loader.js';

const QR_TEXT =
  '00020101021226280010mn.gov.pay0110GOV-MOF-015204931153034965405120005802MN5912Sangiin yaam' +
  '6011ULAANBAATAR62300115MOF-2025-0001230507PAY000164210002MN0111Сангийн яам6304F463';

const khan: BankLinkConfig = {
  name: 'Khan Bank',
  description: 'Хаан банк',
  logo: 'https://qpay.mn/q/logo/khanbank.png',
  linkTemplate: 'khanbank://q?qPay_QRcode={qr}',
};

describe('buildBankLinks', () => {
  it('fills {qr} with the URI-encoded QR text and copies the display fields', () => {
    const [link] = buildBankLinks([khan], QR_TEXT);
    expect(link).toEqual({
      name: 'Khan Bank',
      description: 'Хаан банк',
      logo: 'https://qpay.mn/q/logo/khanbank.png',
      link: `khanbank://q?qPay_QRcode=${encodeURIComponent(QR_TEXT)}`,
    });
    expect(link?.link).not.toMatch(/[\s\u0400-\u04FF]/);
  });

  it('replaces every {qr} occurrence', () => {
    const [link] = buildBankLinks([{ ...khan, linkTemplate: 'app://pay?a={qr}&b={qr}' }], 'A B');
    expect(link?.link).toBe('app://pay?a=A%20B&b=A%20B');
  });

  it('gives every configured bank a link carrying the whole QR text', async () => {
    const banks = await loadBankLinksConfig();
    const links = buildBankLinks(banks, QR_TEXT);
    expect(links).toHaveLength(banks.length);
    for (const link of links) {
      expect(link.link).toContain(encodeURIComponent(QR_TEXT));
      expect(link.link).not.toContain('{qr}');
      const query = new URL(link.link).search;
      expect(decodeURIComponent(query.slice(query.indexOf('=') + 1))).toBe(QR_TEXT);
    }
  });
});

describe('buildShortUrl', () => {
  it('appends the payment id as one path segment, with or without a trailing slash', () => {
    const id = '0b8f4a3e-5c1d-4e2f-9a7b-3c6d5e4f1a2b';
    expect(buildShortUrl('https://pay.gov.mn/p', id)).toBe(`https://pay.gov.mn/p/${id}`);
    expect(buildShortUrl('https://pay.gov.mn/p/', id)).toBe(`https://pay.gov.mn/p/${id}`);
    expect(buildShortUrl('https://pay.gov.mn', id)).toBe(`https://pay.gov.mn/${id}`);
  });

  it('encodes the id and refuses non-http bases', () => {
    expect(buildShortUrl('https://pay.gov.mn/p', 'a/b c')).toBe('https://pay.gov.mn/p/a%2Fb%20c');
    expect(() => buildShortUrl('ftp://pay.gov.mn', 'x')).toThrow(/http/);
    expect(() => buildShortUrl('not a url', 'x')).toThrow();
  });
});

describe('config/banks.json', () => {
  it('validates and lists the Mongolian banks and wallets, Khan Bank first', async () => {
    const banks = await loadBankLinksConfig();
    expect(banks.map((b) => b.name)).toEqual([
      'Khan Bank', 'Golomt Bank', 'Trade and Development Bank', 'Xac Bank', 'State Bank',
      'Capitron Bank', 'Bogd Bank', 'Chinggis Khaan Bank', 'Most Money', 'Arig Bank',
      'Trans Bank', 'M bank', 'socialpay', 'Monpay', 'Toki',
    ]);
    expect(banks[0]).toEqual(khan);
    for (const bank of banks) expect(bank.logo).toMatch(/^https:\/\//);
  });
});

describe('BankLinkConfigSchema', () => {
  it.each([
    ['no {qr} placeholder', { ...khan, linkTemplate: 'khanbank://q' }],
    ['a non-https logo', { ...khan, logo: 'http://qpay.mn/logo.png' }],
    ['an empty name', { ...khan, name: '' }],
    ['an unknown property', { ...khan, colour: 'red' }],
    ['a missing description', { name: khan.name, logo: khan.logo, linkTemplate: khan.linkTemplate }],
    ['a template without a scheme', { ...khan, linkTemplate: '{qr}' }],
  ])('rejects %s', (_case, value) => {
    expect(Value.Check(BankLinkConfigSchema, value)).toBe(false);
  });

  it('rejects an empty bank list', () => {
    expect(Value.Check(BanksFileSchema, { banks: [] })).toBe(false);
    expect(Value.Check(BanksFileSchema, { banks: [khan] })).toBe(true);
  });
});

describe('qr-config.loader', () => {
  let dir: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'qr-config-'));
  });

  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  async function file(name: string, content: string): Promise<string> {
    const path = join(dir, name);
    await writeFile(path, content);
    return path;
  }

  it('loads both shipped config files', async () => {
    const { banks, schemes } = await loadQrConfig();
    expect(banks.length).toBeGreaterThan(0);
    expect(Value.Check(QrSchemeConfigSchema, schemes)).toBe(true);
    expect(schemes.govstd.guid).toBe('mn.gov.pay');
  });

  it('names the file and the offending field when a bank entry is invalid', async () => {
    const path = await file('bad-banks.json', JSON.stringify({ banks: [{ ...khan, linkTemplate: 'x://' }] }));
    await expect(loadBankLinksConfig(path)).rejects.toThrow(QrConfigError);
    await expect(loadBankLinksConfig(path)).rejects.toThrow(/bad-banks\.json: invalid config: \/banks\/0\/linkTemplate/);
  });

  it('rejects malformed JSON, a missing file and duplicate bank names', async () => {
    await expect(loadBankLinksConfig(await file('broken.json', '{ "banks": ['))).rejects.toThrow(/cannot read JSON/);
    await expect(loadBankLinksConfig(join(dir, 'absent.json'))).rejects.toThrow(/cannot read JSON/);
    const twice = await file('twice.json', JSON.stringify({ banks: [khan, { ...khan, logo: 'https://x.mn/l.png' }] }));
    await expect(loadBankLinksConfig(twice)).rejects.toThrow(/"Khan Bank" is listed twice/);
  });

  it('rejects a scheme config with a malformed AID or an over-long city', async () => {
    const fallback = { merchantId: 'GOV-TREASURY', name: 'Treasury' };
    const good = {
      merchantCity: 'ULAANBAATAR',
      mcc: '9311',
      qrpay: { aid: 'A000000999000001', merchantAccountPrefix: '' },
      govstd: { guid: 'mn.gov.pay', merchantAccountPrefix: '' },
      fallbackPayees: { mof: fallback, etax: fallback, police: fallback },
    };
    await expect(loadQrSchemeConfig(await file('good.json', JSON.stringify(good)))).resolves.toEqual(good);
    const badAid = { ...good, qrpay: { ...good.qrpay, aid: 'a00000099' } };
    await expect(loadQrSchemeConfig(await file('aid.json', JSON.stringify(badAid)))).rejects.toThrow(/\/qrpay\/aid/);
    const longCity = { ...good, merchantCity: 'ULAANBAATAR CITY' };
    await expect(loadQrSchemeConfig(await file('city.json', JSON.stringify(longCity)))).rejects.toThrow(/merchantCity/);
  });
});
