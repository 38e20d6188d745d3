import { describe, expect, it } from 'vitest';
import { canMove, IllegalTransitionError, nextPaymentStatus, PAYMENT_ENDINGS, PAYMENT_TRANSITIONS, paymentMove, type PaymentEvent } from '../../src/domain/payment-transitions.js';
import { EVENT_DATA, EventData } from '../../src/schemas/event.schema.js';
import type { PaymentStatus } from '../../src/domain/vocabulary.js';
import { effectiveInvoiceStatus, invoiceMove, isOverdue } from '../../src/domain/invoice-status.js';
import { checkBackoff, isExpired, nextCheckDelayMs } from '../../src/domain/check-schedule.js';

const STATUSES: PaymentStatus[] = ['pending', 'submitted', 'confirmed', 'failed', 'canceled'];

describe('payment transition table', () => {
  it('follows SPEC: submitted is confirmed by approval, submitted and confirmed are canceled by the partner', () => {
    expect(nextPaymentStatus('submitted', 'ministry_approved')).toBe('confirmed');
    expect(nextPaymentStatus('submitted', 'partner_canceled')).toBe('canceled');
    expect(nextPaymentStatus('confirmed', 'partner_canceled')).toBe('canceled');
    expect(nextPaymentStatus('pending', 'ministry_accepted')).toBe('submitted');
    expect(nextPaymentStatus('pending', 'ministry_refused')).toBe('failed');
  });

  it('refuses every move not in the table with a 409 domain error naming the current status', () => {
    expect(() => nextPaymentStatus('pending', 'partner_canceled')).toThrow(IllegalTransitionError);
    expect(() => nextPaymentStatus('failed', 'partner_canceled')).toThrow('Payment cannot be canceled in status failed');
    expect(() => nextPaymentStatus('confirmed', 'ministry_approved')).toThrow(IllegalTransitionError);
    const err = (() => {
      try {
        nextPaymentStatus('canceled', 'expired');
      } catch (e) {
        return e;
      }
    })();
    expect(err).toBeInstanceOf(IllegalTransitionError);
    expect((err as IllegalTransitionError).code).toBe('illegal_transition');
  });

  it('leaves the final states only by a partner cancel of a confirmed payment', () => {
    const events = [...new Set(PAYMENT_TRANSITIONS.map((t) => t.event))] as PaymentEvent[];
    for (const event of events) {
      expect(canMove('failed', event)).toBe(false);
      expect(canMove('canceled', event)).toBe(false);
    }
    expect(events.filter((e) => canMove('confirmed', e))).toEqual(['partner_canceled']);
  });

  it('announces exactly the moves that end an accepted payment: failed ones as payment.failed, canceled ones with their reason', () => {
    const accepted: PaymentStatus[] = ['submitted', 'confirmed'];
    const ending = PAYMENT_TRANSITIONS.filter((t) => accepted.includes(t.from) && (t.to === 'failed' || t.to === 'canceled'));
    expect(Object.keys(PAYMENT_ENDINGS).sort()).toEqual([...new Set(ending.map((t) => t.event))].sort());
    for (const t of ending) expect(PAYMENT_ENDINGS[t.event]?.event).toBe(t.to === 'failed' ? 'payment.failed' : 'payment.canceled');
    const reasons = Object.values(PAYMENT_ENDINGS).map((e) => (e.event === 'payment.canceled' ? e.reason : null));
    expect(reasons.filter((r) => r !== null).sort()).toEqual(['expired', 'ministry', 'partner']);
  });

  it("describes every event's data field in the events API's data schema", () => {
    const fields = Object.keys(EventData.properties);
    for (const schema of Object.values(EVENT_DATA)) {
      for (const [name, field] of Object.entries(schema.properties)) {
        expect(fields).toContain(name);
        expect(JSON.stringify((EventData.properties as Record<string, unknown>)[name])).toBe(JSON.stringify(field));
      }
    }
  });

  it('gives every event one target and the guard states it may leave from', () => {
    for (const t of PAYMENT_TRANSITIONS) {
      const move = paymentMove(t.event);
      expect(move.to).toBe(t.to);
      expect(move.from).toContain(t.from);
      expect(move.from.every((s) => STATUSES.includes(s))).toBe(true);
    }
  });
});

describe('invoice transitions and the overdue rule', () => {
  it('pays open (or overdue) invoices and reopens only paid ones', () => {
    expect(invoiceMove('payment_confirmed')).toEqual({ event: 'payment_confirmed', from: ['open'], to: 'paid' });
    expect(invoiceMove('payment_canceled')).toEqual({ event: 'payment_canceled', from: ['paid'], to: 'open' });
  });

  it('is overdue only when open and strictly past the due date', () => {
    const now = new Date('2026-01-02T00:00:00Z');
    expect(isOverdue('open', new Date('2026-01-01T23:59:59Z'), now)).toBe(true);
    expect(isOverdue('open', now, now)).toBe(false);
    expect(isOverdue('open', null, now)).toBe(false);
    expect(isOverdue('paid', new Date('2020-01-01Z'), now)).toBe(false);
    expect(effectiveInvoiceStatus('open', new Date('2020-01-01Z'), now)).toBe('overdue');
  });
});

describe('check schedule', () => {
  const schedule = { intervalMs: 2000, fastChecks: 3, maxDelayMs: 30_000 };

  it('keeps the interval for the first checks, then doubles up to the cap', () => {
    expect([0, 1, 2, 3, 4, 5, 6, 7, 8, 50, 10_000].map((n) => nextCheckDelayMs(checkBackoff(schedule), n))).toEqual([
      2000, 2000, 2000, 2000, 4000, 8000, 16_000, 30_000, 30_000, 30_000, 30_000,
    ]);
  });

  it('expires a payment once the expiry has passed since submission, never an unsubmitted one', () => {
    const at = new Date('2026-01-01T00:00:00Z');
    expect(isExpired(at, new Date(at.getTime() + 999), 1000)).toBe(false);
    expect(isExpired(at, new Date(at.getTime() + 1000), 1000)).toBe(true);
    expect(isExpired(null, new Date(at.getTime() + 10_000), 1000)).toBe(false);
  });
});
