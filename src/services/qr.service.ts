import { buildBankLinks, buildShortUrl } from '../domain/bank-links.js';
import type { QrPayBody } from '../schemas/payment.schema.js';
import type { BankLinkConfig } from '../domain/bank-links.schema.js';
import { buildEmvcoPayload, type QrSchemeConfig } from '../domain/emvco-qr.js';
import type { QrStandard } from '../domain/vocabulary.js';
import { qrPngBase64 } from '../domain/qr-png.js';
import { isUuid } from '../domain/uuid.js';

export interface QrServiceDeps {
  banks: readonly BankLinkConfig[];
  schemes: QrSchemeConfig;
  /** Base of the one-tap link; the payment id is appended as the last path segment. */
  shortUrlBase: string;
}

export interface QrBuildInput {
  standard: QrStandard;
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
  build(input: QrBuildInput): QrPay;
}

export function createQrService(deps: QrServiceDeps): QrService {
  // Fails at start-up rather than on the first payment when the base URL is unusable.
  buildShortUrl(deps.shortUrlBase, 'check');
  return {
    build(input) {
      const qrText = buildEmvcoPayload({
        standard: input.standard,
        scheme: deps.schemes,
        merchantAccount: merchantAccountFor(deps.schemes, input.standard, input.payeeId),
        amount: input.amount,
        payeeName: input.payeeName,
        payeeNameLocal: isAscii(input.payeeName) ? undefined : input.payeeName,
        city: deps.schemes.merchantCity,
        billNumber: input.billNumber,
        referenceLabel: referenceLabelFor(input.paymentId),
      });
      return {
        qrText,
        qrImage: qrPngBase64(qrText),
        shortUrl: buildShortUrl(deps.shortUrlBase, input.paymentId),
        urls: buildBankLinks(deps.banks, qrText),
      };
    },
  };
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
