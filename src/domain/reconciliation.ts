import { amountFromMongo, compareAmounts, toMongo } from './money.js';
import type { DiscrepancyKind, PaymentStatus } from './vocabulary.js';

/** What the service holds for the payment id a settlement entry names; null when it has none. */
export interface LocalPayment {
  status: PaymentStatus;
  amount: string;
}

/** What one settlement entry means for the books. */
export interface EntryVerdict {
  /** Confirmed here and settled for the same amount. */
  matched: boolean;
  /** Still submitted here: the settlement is the ministry's approval, so it is confirmed now. */
  autoConfirm: boolean;
  discrepancies: DiscrepancyKind[];
}

/**
 * A settlement's entries by payment id. An id the ministry lists twice is one entry of the summed
 * amount: a payment settled twice then shows as an amount mismatch instead of passing as matched.
 */
export function entriesById<E extends { paymentId: string; amount: string }>(entries: readonly E[]): Map<string, E> {
  const byId = new Map<string, E>();
  for (const entry of entries) {
    const seen = byId.get(entry.paymentId);
    byId.set(entry.paymentId, seen ? { ...seen, amount: amountFromMongo(Number(toMongo(seen.amount) + toMongo(entry.amount))) } : entry);
  }
  return byId;
}

/**
 * Judges a settlement entry against the payment it names. The payment id decides which payment an
 * entry belongs to, never the refNum: one invoice may have had several payments.
 */
export function judgeEntry(local: LocalPayment | null, settledAmount: string): EntryVerdict {
  if (!local) return { matched: false, autoConfirm: false, discrepancies: ['missing_locally'] };
  const sameAmount = compareAmounts(local.amount, settledAmount) === 0;
  const amount: DiscrepancyKind[] = sameAmount ? [] : ['amount_mismatch'];
  switch (local.status) {
    case 'confirmed':
      return { matched: sameAmount, autoConfirm: false, discrepancies: amount };
    case 'submitted':
      return { matched: false, autoConfirm: true, discrepancies: amount };
    case 'canceled':
      return { matched: false, autoConfirm: false, discrepancies: ['settled_but_canceled'] };
    case 'failed':
      return { matched: false, autoConfirm: false, discrepancies: ['settled_but_failed'] };
    case 'pending':
      return { matched: false, autoConfirm: false, discrepancies: ['missing_locally'] };
  }
}
