import { LRUCache } from 'lru-cache';
import { buildBankLinks, buildShortUrl } from '../domain/bank-links.js';
import type { QrPayBody } from '../schemas/payment.schema.js';
import type { BankLinkConfig } from '../domain/bank-links.schema.js';
import { buildEmvcoPayload, fitsMerchantAccount, payeeNameShown, type QrSchemeConfig } from '../domain/emvco-qr.js';
import { QR_STANDARDS, SOURCES, type QrStandard, type Source } from '../domain/vocabulary.js';
import { qrPngBase64 } from '../codecs/qr-png.codec.js';
import { isUuid } from '../domain/uuid.js';

export interface QrServiceDeps {
  banks: readonly BankLinkConfig[];
  schemes: QrSchemeConfig;
  /** Base of the one-tap link; the payment id is appended as the last path segment. */
  shortUrlBase: string;
  /** Draws a payload as a base64 PNG. */
  renderPng?: (qrText: string) => string;
  /** How many drawn QR images are kept; each payment's image is drawn once while it stays cached. */
  imageCacheSize?: number;
}

export interface QrBuildInput {
  standard: QrStandard;
  /** The invoice's ministry system: its collection account stands in for a payee the QR cannot carry. */
  source: Source;
  paymentId: string;
  /** Decimal string in tugrik, at most 2 decimals. */
  amount: string;
  payeeId: string;
  payeeName: string;
  /** Bill number shown to the bank app; the service passes its own payment reference, never the ministry refNum. */
  billNumber: string;
}

/** SPEC's `qrpay` object. */
export type QrPay = QrPayBody;

export interface QrService {
  /**
   * The EMVCo payload for a payment, with the invoice's payee fitted to what the payload can carry.
   * Throws EmvcoPayloadError only when the payment itself cannot be expressed (its amount).
   */
  payload(input: QrBuildInput): string;
  /** The `qrpay` object for a payment's payload, as every answer about that payment shows it. */
  present(paymentId: string, qrText: string): QrPay;
  /** The payment's stored payload, or, for a payment stored without one, the payload built now. */
  forPayment(storedQrText: string | null, input: QrBuildInput): QrPay;
}

const DEFAULT_IMAGE_CACHE_SIZE = 1000;

export function createQrService(deps: QrServiceDeps): QrService {
  // Fails at start-up rather than on the first payment when the base URL is unusable.
  buildShortUrl(deps.shortUrlBase, 'check');
  checkFallbacks(deps.schemes);
  const renderPng = deps.renderPng ?? qrPngBase64;
  // Keyed by the payload: the image is a function of it alone, so a hit is always the right image.
  const images = new LRUCache<string, string>({ max: deps.imageCacheSize ?? DEFAULT_IMAGE_CACHE_SIZE });

  function imageOf(qrText: string): string {
    let image = images.get(qrText);
    if (image === undefined) {
      image = renderPng(qrText);
      images.set(qrText, image);
    }
    return image;
  }

  function payload(input: QrBuildInput): string {
    const payee = fitPayee(deps.schemes, input);
    return buildEmvcoPayload({
      standard: input.standard,
      scheme: deps.schemes,
      merchantAccount: payee.merchantAccount,
      amount: input.amount,
      payeeName: payee.name,
      payeeNameLocal: isAscii(input.payeeName) ? undefined : input.payeeName,
      city: deps.schemes.merchantCity,
      billNumber: input.billNumber,
      referenceLabel: referenceLabelFor(input.paymentId),
    });
  }

  function present(paymentId: string, qrText: string): QrPay {
    return {
      qrText,
      qrImage: imageOf(qrText),
      shortUrl: buildShortUrl(deps.shortUrlBase, paymentId),
      urls: buildBankLinks(deps.banks, qrText),
    };
  }

  return {
    payload,
    present,
    forPayment: (storedQrText, input) => present(input.paymentId, storedQrText ?? payload(input)),
  };
}

/**
 * The payee as the payload names it. The payee id is an account: it is used exactly as the
 * ministry gave it or not at all (shortened or transliterated it could name another organisation),
 * so an id the payload cannot carry (empty, padded with spaces, not printable ASCII, longer than
 * the merchant account template leaves room for) is replaced by the ministry system's collection account. The
 * name is only shown, so it is transliterated and shortened, and replaced only when nothing is left.
 */
export function fitPayee(schemes: QrSchemeConfig, input: Pick<QrBuildInput, 'standard' | 'source' | 'payeeId' | 'payeeName'>): { merchantAccount: string; name: string } {
  const fallback = schemes.fallbackPayees[input.source];
  const own = merchantAccountFor(schemes, input.standard, input.payeeId);
  const carried = input.payeeId !== '' && input.payeeId.trim() === input.payeeId && fitsMerchantAccount(schemes, input.standard, own);
  const merchantAccount = carried ? own : merchantAccountFor(schemes, input.standard, fallback.merchantId);
  const name = payeeNameShown(input.payeeName) === '' ? fallback.name : input.payeeName;
  return { merchantAccount, name };
}

/** A fallback that does not fit is a configuration error, so it stops the start rather than a payment. */
function checkFallbacks(schemes: QrSchemeConfig): void {
  for (const source of SOURCES) {
    for (const standard of QR_STANDARDS) {
      const account = merchantAccountFor(schemes, standard, schemes.fallbackPayees[source].merchantId);
      if (!fitsMerchantAccount(schemes, standard, account)) {
        throw new Error(`QR scheme config: the ${source} fallback merchant id does not fit a ${standard} merchant account`);
      }
    }
  }
}

/** The account the scheme routes to: the scheme's prefix plus the receiving organisation's id. */
export function merchantAccountFor(
  schemes: QrSchemeConfig,
  standard: QrStandard,
  payeeId: string,
): string {
  return schemes[standard].merchantAccountPrefix + payeeId;
}

/**
 * EMVCo caps the reference label at 25 characters and a UUID has 36, so a UUID payment id is
 * written as its 128-bit value in base 36 (at most 25 characters, reversible, so a scanned QR
 * still leads back to the payment). Other ids are used as they are.
 */
export function referenceLabelFor(paymentId: string): string {
  if (!isUuid(paymentId)) return paymentId;
  return BigInt(`0x${paymentId.replace(/-/g, '')}`).toString(36).toUpperCase().padStart(25, '0');
}

/** The bill number a payment's QR carries: its id's hex digits, as long as EMVCo allows. */
export function billNumberFor(paymentId: string): string {
  return paymentId.replace(/-/g, '').slice(0, 25);
}

function isAscii(text: string): boolean {
  return /^[\x20-\x7E]*$/.test(text);
}
