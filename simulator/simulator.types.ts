import type { InvoiceFixture } from './fixtures.schema.js';

/* The simulated ministry's records, apart from the state that holds them, so its desks can name them. */

export type SimSource = InvoiceFixture['source'];
export type SearchField = 'register' | 'vehicleNo' | 'taxRef';

export interface SimInvoice {
  source: SimSource;
  refNum: string;
  description: string;
  /** The balance while the invoice is open (part-payments reduce it); once paid, the balance its last payment cleared. */
  amountMongo: number;
  status: 'open' | 'paid' | 'canceled';
  dueDate: Date | null;
  issuedAt: Date | null;
  payer: { register: string; name: string } | null;
  payee: { id: string; name: string };
  vehicleNo: string | null;
  taxRef: string | null;
  year: number | string | null;
  rejectPayment: boolean;
  allowPartial: boolean;
  linkedRefNums: string[];
  /** Overrides of the source's wire record (see the fixture's `wire`). */
  wire: Record<string, unknown>;
}

export interface SimPayment {
  source: SimSource;
  paymentId: string;
  refNum: string;
  amountMongo: number;
  /** rejected: the ministry refused it after first accepting it (final, like canceled). */
  status: 'submitted' | 'confirmed' | 'canceled' | 'rejected';
  linkedRefNums: string[];
  /**
   * Whether it cleared its invoice's balance and still stands as what cleared it: false for a
   * part-payment, and once the reversal of an earlier part-payment has made its invoice owe again.
   */
  settled: boolean;
  /** Whether its confirmation paid the linked invoices (only the payment that cleared the balance does). */
  paidLinked: boolean;
  submittedAt: Date;
  confirmedAt: Date | null;
  canceledAt: Date | null;
}

export type SubmitOutcome = { accepted: true; payment: SimPayment } | { accepted: false; reason: string };

export interface SubmitCommand {
  paymentId: string;
  refNum: string;
  amountMongo: number;
}
