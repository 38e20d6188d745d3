import type { BankLinkConfig } from './bank-links.schema.js';

export type { BankLinkConfig } from './bank-links.schema.js';

export interface BankLink {
  name: string;
  description: string;
  logo: string;
  link: string;
}

const QR_PLACEHOLDER = '{qr}';

/** One deeplink per configured bank or wallet, each carrying the whole QR text. */
export function buildBankLinks(banks: readonly BankLinkConfig[], qrText: string): BankLink[] {
  const encoded = encodeURIComponent(qrText);
  return banks.map((bank) => ({
    name: bank.name,
    description: bank.description,
    logo: bank.logo,
    link: bank.linkTemplate.split(QR_PLACEHOLDER).join(encoded),
  }));
}

/** `https://pay.example.mn/p` + id -> `https://pay.example.mn/p/<id>`. */
export function buildShortUrl(baseUrl: string, paymentId: string): string {
  const base = new URL(baseUrl);
  if (base.protocol !== 'https:' && base.protocol !== 'http:') {
    throw new Error(`short URL base must be http(s), got ${base.protocol}`);
  }
  const path = base.pathname.endsWith('/') ? base.pathname : `${base.pathname}/`;
  return new URL(`${path}${encodeURIComponent(paymentId)}`, base.origin).toString();
}
