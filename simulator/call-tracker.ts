import type { SimOperation } from './fault.registry.js';

/** What a test reads about one operation of one source: how many calls it got, and how many at once. */
export interface CallReport {
  calls: number;
  inFlight: number;
  /** The most calls in flight at once since the last reset. */
  maxInFlight: number;
  /** The most calls naming one payment in flight at once since the last reset (status, cancel). */
  maxInFlightPerPayment: number;
}

const keyOf = (...parts: string[]) => parts.join('\u0000');

/**
 * Calls in flight per source and operation, and per payment for the calls that name one, with
 * their peaks: how a test sees, at the ministry's side, how many calls the service made at once.
 * A reset clears the counts and peaks but not what is in flight, which still ends later.
 */
export class CallTracker {
  private readonly inFlight = new Map<string, number>();
  private readonly peaks = new Map<string, number>();
  private readonly perPaymentPeaks = new Map<string, number>();
  private readonly counts = new Map<string, number>();

  /** A call started; the function returned ends it (only its first call counts). */
  start(source: string, operation: SimOperation, paymentId: string | undefined): () => void {
    const op = keyOf(source, operation);
    const one = paymentId === undefined ? null : keyOf(source, operation, paymentId);
    this.counts.set(op, (this.counts.get(op) ?? 0) + 1);
    this.peaks.set(op, Math.max(this.peaks.get(op) ?? 0, this.raise(op)));
    if (one) this.perPaymentPeaks.set(op, Math.max(this.perPaymentPeaks.get(op) ?? 0, this.raise(one)));
    let ended = false;
    return () => {
      if (ended) return;
      ended = true;
      this.lower(op);
      if (one) this.lower(one);
    };
  }

  report(source: string, operation: SimOperation): CallReport {
    const op = keyOf(source, operation);
    return {
      calls: this.counts.get(op) ?? 0,
      inFlight: this.inFlight.get(op) ?? 0,
      maxInFlight: this.peaks.get(op) ?? 0,
      maxInFlightPerPayment: this.perPaymentPeaks.get(op) ?? 0,
    };
  }

  reset(): void {
    this.peaks.clear();
    this.perPaymentPeaks.clear();
    this.counts.clear();
  }

  /** One more in flight under `key`; returns how many are now. */
  private raise(key: string): number {
    const now = (this.inFlight.get(key) ?? 0) + 1;
    this.inFlight.set(key, now);
    return now;
  }

  private lower(key: string): void {
    const left = (this.inFlight.get(key) ?? 1) - 1;
    if (left > 0) this.inFlight.set(key, left);
    else this.inFlight.delete(key);
  }
}
