import { isUuid } from '../domain/uuid.js';
import { canonicalAmount } from '../domain/money.js';
import { UNRESOLVED_STATUSES } from '../payments/payment.machine.js';
import type { PaymentStatus } from '../domain/vocabulary.js';
import type { BankLink } from '../domain/bank-links.js';
import type { ShortLinkRepository } from '../db/repositories/short-link.repository.js';
import type { ShortLinkStatus, ShortLinkStatusBody } from '../schemas/short-link.schema.js';
import { billNumberFor, type QrService } from '../payments/payments.module.js';
import { maskRegister } from '../domain/register-mask.js';

/**
 * The public QR landing page behind `qrpay.shortUrl`. No API key protects it: the payment id (a
 * random UUID) is the capability, so it shows only what the customer paying needs (amount, payee,
 * invoice description, the QR and bank links) and nothing about the payer, the partner or the
 * invoice's identity. It only reads: no ministry call, no write, whoever asks and however often.
 */
export interface ShortLinkServiceDeps {
  links: Pick<ShortLinkRepository, 'findPage' | 'findStatus' | 'findReceipt'>;
  /** The same QR service as `POST /payments`, so the page carries the very QR that answer did. */
  qr: Pick<QrService, 'forPayment'>;
}

export interface ShortLinkView {
  paymentId: string;
  status: ShortLinkStatus;
  /** Canonical decimal text in tugrik ("12000.5"). */
  amount: string;
  payeeName: string;
  description: string;
  /** Only while the payment can still be paid: a paid or closed payment's page carries no QR. */
  qr: { qrText: string; qrImage: string; urls: BankLink[] } | null;
  /** Only once it is confirmed: what the customer shows a clerk. */
  paid: { paidAt: Date; partnerReference: string | null } | null;
}

/** A confirmed payment's receipt (`/q/{paymentId}/receipt`): the page's facts and the payer, masked. */
export interface ShortLinkReceipt {
  paymentId: string;
  amount: string;
  paidAt: Date;
  payeeName: string;
  description: string;
  partnerReference: string | null;
  /** Masked (maskRegister); null when the invoice names no payer. */
  payerRegister: string | null;
}

/** A payment canceled by the expiry rule is shown as expired, not as canceled by someone. */
export function shortLinkStatus(status: PaymentStatus, statusEvent: string | null): ShortLinkStatus {
  return status === 'canceled' && statusEvent === 'expired' ? 'expired' : status;
}

export function createShortLinkService(deps: ShortLinkServiceDeps) {
  return {
    /** The page's content; null for an unknown or malformed id (no query is made for the latter). */
    async page(paymentId: string): Promise<ShortLinkView | null> {
      if (!isUuid(paymentId)) return null;
      const row = await deps.links.findPage(paymentId.toLowerCase());
      if (!row) return null;
      const payable = UNRESOLVED_STATUSES.includes(row.status);
      // The payload the payment was created with, so later partner settings never change it; the
      // image comes from the QR service's cache, drawn once per payment rather than per visit.
      const qrpay = payable
        ? deps.qr.forPayment(row.qr_text, {
            standard: row.qr_standard,
            source: row.source,
            paymentId: row.id,
            amount: row.amount,
            payeeId: row.payee_id,
            payeeName: row.payee_name,
            billNumber: billNumberFor(row.id),
          })
        : null;
      return {
        paymentId: row.id,
        status: shortLinkStatus(row.status, row.status_event),
        amount: canonicalAmount(row.amount),
        payeeName: row.payee_name,
        description: row.description,
        qr: qrpay && { qrText: qrpay.qrText, qrImage: qrpay.qrImage, urls: qrpay.urls },
        paid: row.status === 'confirmed' && row.paid_at ? { paidAt: row.paid_at, partnerReference: row.partner_reference } : null,
      };
    },

    /** Only a confirmed payment has a receipt; null otherwise, as for an unknown or malformed id. */
    async receipt(paymentId: string): Promise<ShortLinkReceipt | null> {
      if (!isUuid(paymentId)) return null;
      const row = await deps.links.findReceipt(paymentId.toLowerCase());
      if (row?.status !== 'confirmed' || !row.paid_at) return null;
      return {
        paymentId: row.id,
        amount: canonicalAmount(row.amount),
        paidAt: row.paid_at,
        payeeName: row.payee_name,
        description: row.description,
        partnerReference: row.partner_reference,
        payerRegister: row.payer_register === null ? null : maskRegister(row.payer_register),
      };
    },

    /** What the page polls; null for an unknown or malformed id. */
    async status(paymentId: string): Promise<ShortLinkStatusBody | null> {
      if (!isUuid(paymentId)) return null;
      const row = await deps.links.findStatus(paymentId.toLowerCase());
      return row && { status: shortLinkStatus(row.status, row.status_event) };
    },
  };
}

export type ShortLinkService = ReturnType<typeof createShortLinkService>;
