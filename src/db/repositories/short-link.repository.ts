import { compileOnce, type SlotFn } from '../compiled-query.js';
import type { Db } from '../database.js';
import type { PaymentStatus, QrStandard, Source } from '../../domain/vocabulary.js';

/**
 * What the public QR landing page (`GET /q/{paymentId}`) may know of a payment: the columns the
 * QR and the page are built from, and nothing else. No payer, partner or invoice identity leaves
 * the database through this read (the receipt's read below takes the payer's register, to mask).
 */
export interface ShortLinkRow {
  id: string;
  status: PaymentStatus;
  /** The event of the latest state change: tells an expired payment from a canceled one. */
  status_event: string | null;
  /** Decimal text in tugrik. */
  amount: string;
  payee_id: string;
  payee_name: string;
  description: string;
  /** The payload the payment was created with; null for a payment from before payloads were kept. */
  qr_text: string | null;
  /** What a payment without a kept payload has its QR rebuilt from, with the columns above. */
  source: Source;
  qr_standard: QrStandard;
  /** When the ministry confirmed it: the landing page of a paid payment says when. */
  paid_at: Date | null;
  /** The bank's own reference of the payment, shown to the customer who paid through it. */
  partner_reference: string | null;
}

/** What a confirmed payment's receipt shows; the payer's register leaves only to be masked (short-link.service.ts). */
export interface ShortLinkReceiptRow {
  id: string;
  status: PaymentStatus;
  /** Decimal text in tugrik. */
  amount: string;
  paid_at: Date | null;
  payee_name: string;
  description: string;
  partner_reference: string | null;
  payer_register: string | null;
}

export interface ShortLinkStatusRow {
  status: PaymentStatus;
  status_event: string | null;
}

/** Reads only, by primary key: the landing page is public, so each request costs one indexed lookup. */
export function createShortLinkRepository(db: Db) {
  const page = compileOnce((slot: SlotFn<'id'>) =>
    db
      .selectFrom('payments as p')
      .innerJoin('invoices as i', 'i.id', 'p.invoice_id')
      .innerJoin('partners as pa', 'pa.id', 'p.partner_id')
      .select(['p.id', 'p.status', 'p.status_event', 'p.amount', 'i.payee_id', 'i.payee_name', 'i.description', 'p.qr_text', 'p.source', 'pa.qr_standard', 'p.paid_at', 'p.partner_reference'])
      .where('p.id', '=', slot<string>('id')),
  );
  const receipt = compileOnce((slot: SlotFn<'id'>) =>
    db
      .selectFrom('payments as p')
      .innerJoin('invoices as i', 'i.id', 'p.invoice_id')
      .select(['p.id', 'p.status', 'p.amount', 'p.paid_at', 'i.payee_name', 'i.description', 'p.partner_reference', 'i.payer_register'])
      .where('p.id', '=', slot<string>('id')),
  );
  const status = compileOnce((slot: SlotFn<'id'>) =>
    db.selectFrom('payments').select(['status', 'status_event']).where('id', '=', slot<string>('id')),
  );

  return {
    async findPage(id: string): Promise<ShortLinkRow | null> {
      const { rows } = await db.executeQuery(page({ id }));
      return rows[0] ?? null;
    },

    async findReceipt(id: string): Promise<ShortLinkReceiptRow | null> {
      const { rows } = await db.executeQuery(receipt({ id }));
      return rows[0] ?? null;
    },

    async findStatus(id: string): Promise<ShortLinkStatusRow | null> {
      const { rows } = await db.executeQuery(status({ id }));
      return rows[0] ?? null;
    },
  };
}

export type ShortLinkRepository = ReturnType<typeof createShortLinkRepository>;
