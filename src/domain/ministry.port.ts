import type { InvoiceFilterKind, Source, StoredInvoiceStatus } from './vocabulary.js';

export interface InvoiceFilter {
  kind: InvoiceFilterKind;
  value: string;
}

/** The uniform invoice every adapter maps its wire format to. */
export interface UpstreamInvoice {
  source: Source;
  refNum: string;
  description: string;
  /** Decimal string in tugrik with at most 2 decimals ("12000", "12000.5"); never a float. */
  amount: string;
  status: StoredInvoiceStatus;
  /** ISO 8601 or null. */
  dueDate: string | null;
  issuedAt: string | null;
  vehicleNo: string | null;
  taxRef: string | null;
  payer: { register: string; name: string } | null;
  payee: { id: string; name: string };
  /** Passed through exactly as the ministry gave it (number or string); null when absent. */
  year: number | string | null;
}

export interface SubmitPaymentRequest {
  /** The service's payment UUID; the ministry treats a repeated id as the same payment. */
  paymentId: string;
  refNum: string;
  amount: string;
}

export type SubmitPaymentResult =
  | { accepted: true; linkedRefNums: string[] }
  | { accepted: false; reason: string };

export type UpstreamPaymentStatus = 'submitted' | 'confirmed' | 'canceled' | 'rejected' | 'unknown';

export interface UpstreamPaymentState {
  /** `unknown`: the ministry has no record of this payment id; `rejected`: it refused it after accepting. */
  status: UpstreamPaymentStatus;
  confirmedAt: string | null;
}

export type CancelAnswer = 'canceled' | 'unknown';

export interface PaymentRef {
  paymentId: string;
  refNum: string;
}

export interface SettlementEntry {
  /** The payment id the ministry received at submit: what ties the entry to one payment. */
  paymentId: string;
  refNum: string;
  amount: string;
  payerReg: string;
  payerName: string;
  description: string;
  /** ISO 8601 time of settlement. */
  date: string;
}

export interface MinistryAdapter {
  readonly source: Source;
  search(filter: InvoiceFilter): Promise<UpstreamInvoice[]>;
  /** null when the ministry does not know the reference. */
  getByRef(refNum: string): Promise<UpstreamInvoice | null>;
  submitPayment(req: SubmitPaymentRequest): Promise<SubmitPaymentResult>;
  getPayment(ref: PaymentRef): Promise<UpstreamPaymentState>;
  /**
   * `unknown` when the ministry has no record of the payment id (nothing to cancel there, as for
   * a submit it never took); a failed call throws.
   */
  cancelPayment(ref: PaymentRef): Promise<CancelAnswer>;
  /** financeDay is YYYY-MM-DD in Mongolian time (UTC+8). */
  settlement(financeDay: string): Promise<SettlementEntry[]>;
}

export type MinistryAdapters = Record<Source, MinistryAdapter>;

export type UpstreamErrorKind = 'timeout' | 'http' | 'malformed' | 'network' | 'circuit-open';

/** Any failure talking to a ministry system. The message is for logs only, never for partners. */
export class UpstreamError extends Error {
  constructor(
    readonly source: Source,
    readonly kind: UpstreamErrorKind,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(`${source} ${kind}: ${message}`, options);
    this.name = 'UpstreamError';
  }
}
