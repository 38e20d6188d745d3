import { describe, expect, it } from 'vitest';
import {
  canMove,
  effectsOf,
  IllegalTransitionError,
  nextPaymentStatus,
  PAYMENT_MACHINE,
  PAYMENT_STATES,
  PAYMENT_TRANSITIONS,
  paymentMove,
  stateOf,
  storedFrom,
  toExternal,
  type PaymentState,
  type PaymentTrigger,
} from '../../src/payments/payment.machine.js';
import { EVENT_DATA, EventData } from '../../src/schemas/event.schema.js';
import type { PaymentStatus } from '../../src/domain/vocabulary.js';
import { effectiveInvoiceStatus, invoiceMove, isOverdue } from '../../src/domain/invoice-status.js';
import { checkBackoff, isExpired, nextCheckDelayMs } from '../../src/domain/check-schedule.js';

const STATUSES: PaymentStatus[] = ['pending', 'submitted', 'confirmed', 'failed', 'canceled'];

describe('payment machine', () => {
  it('stores as the same eleven status changes the payments table has always allowed', () => {
    expect(PAYMENT_TRANSITIONS.map((t) => `${t.from} -${t.event}-> ${t.to}`).sort()).toEqual(
      [
        'pending -ministry_accepted-> submitted',
        'pending -ministry_refused-> failed',
        'pending -never_received-> failed',
        'pending -linked_invoice_taken-> failed',
        'submitted -ministry_approved-> confirmed',
        'submitted -ministry_canceled-> canceled',
        'submitted -ministry_rejected-> failed',
        'submitted -ministry_forgot-> failed',
        'submitted -expired-> canceled',
        'submitted -partner_canceled-> canceled',
        'confirmed -partner_canceled-> canceled',
      ].sort(),
    );
  });

  it('shows every intent as the status it leaves from, and reads it back from the status and the open cancellation', () => {
    expect(PAYMENT_STATES.map((s) => [s, toExternal(s)])).toEqual([
      ['pending', 'pending'],
      ['submitted', 'submitted'],
      ['cancel_requested', 'submitted'],
      ['expiry_requested', 'submitted'],
      ['confirmed', 'confirmed'],
      ['reversal_requested', 'confirmed'],
      ['failed', 'failed'],
      ['cancel_owed', 'failed'],
      ['canceled', 'canceled'],
    ]);
    expect(stateOf('submitted', 'partner')).toBe('cancel_requested');
    expect(stateOf('submitted', 'expiry')).toBe('expiry_requested');
    expect(stateOf('confirmed', 'partner')).toBe('reversal_requested');
    expect(stateOf('confirmed', 'expiry')).toBe('confirmed');
    expect(stateOf('failed', 'owed')).toBe('cancel_owed');
    expect(stateOf('canceled', null)).toBe('canceled');
    for (const state of PAYMENT_STATES) expect(toExternal(stateOf(toExternal(state), null))).toBe(toExternal(state));
  });

  it('reaches every state from pending, and leaves canceled and failed only to settle what is owed to the ministry', () => {
    const reached = new Set<PaymentState>(['pending']);
    for (let grew = true; grew; ) {
      grew = false;
      for (const e of PAYMENT_MACHINE) if (reached.has(e.from) && !reached.has(e.to)) grew = reached.add(e.to) !== undefined;
    }
    expect([...reached].sort()).toEqual([...PAYMENT_STATES].sort());
    expect(PAYMENT_MACHINE.filter((e) => e.from === 'canceled')).toEqual([]);
    expect(PAYMENT_MACHINE.filter((e) => e.from === 'failed').map((e) => e.to)).toEqual(['cancel_owed']);
  });

  it('gives each trigger one set of effects, and every move that changes invoices or the ministry says so', () => {
    for (const e of PAYMENT_MACHINE) expect(effectsOf(e.trigger)).toEqual(e.effects);
    expect(effectsOf('ministry_approved')).toMatchObject({ invoices: 'pay', announce: { event: 'payment.confirmed' } });
    expect(effectsOf('partner_canceled')).toMatchObject({ invoices: 'reopen', ministry: 'close' });
    expect(effectsOf('partner_cancel_requested')).toEqual({ ministry: 'request_partner' });
    expect(effectsOf('expiry_due')).toEqual({ ministry: 'request_expiry' });
    for (const trigger of ['never_received', 'linked_invoice_taken'] as const) expect(effectsOf(trigger)).toMatchObject({ invoices: 'release', ministry: 'owe' });
    for (const e of PAYMENT_MACHINE.filter((x) => x.to === 'canceled' || x.to === 'failed' || x.to === 'cancel_owed')) {
      if (e.from !== 'failed' && e.from !== 'cancel_owed') expect(e.effects.invoices, e.trigger).toMatch(/^(release|reopen)$/);
    }
  });

  it('guards an intent by the statuses it may leave from and changes no status', () => {
    expect(storedFrom('partner_cancel_requested')).toEqual(['submitted', 'confirmed']);
    expect(nextPaymentStatus('confirmed', 'partner_cancel_requested')).toBe('confirmed');
    expect(() => paymentMove('partner_cancel_requested')).toThrow('no transition');
    expect(canMove('confirmed', 'partner_cancel_requested')).toBe(true);
    expect(canMove('pending', 'partner_cancel_requested')).toBe(false);
    expect(() => nextPaymentStatus('failed', 'partner_cancel_requested')).toThrow('Payment cannot be canceled in status failed');
  });
});

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
    const events = [...new Set(PAYMENT_TRANSITIONS.map((t) => t.event))] as PaymentTrigger[];
    for (const event of events) {
      expect(canMove('failed', event)).toBe(false);
      expect(canMove('canceled', event)).toBe(false);
    }
    expect(events.filter((e) => canMove('confirmed', e))).toEqual(['partner_canceled']);
  });

  it('announces exactly the moves that end an accepted payment: failed ones as payment.failed, canceled ones with their reason', () => {
    const accepted: PaymentStatus[] = ['submitted', 'confirmed'];
    const ending = PAYMENT_TRANSITIONS.filter((t) => accepted.includes(t.from) && (t.to === 'failed' || t.to === 'canceled'));
    const announcing = PAYMENT_MACHINE.filter((e) => e.effects.announce?.event === 'payment.failed' || e.effects.announce?.event === 'payment.canceled');
    expect([...new Set(announcing.map((e) => e.trigger))].sort()).toEqual([...new Set(ending.map((t) => t.event))].sort());
    for (const t of ending) expect(effectsOf(t.event).announce?.event).toBe(t.to === 'failed' ? 'payment.failed' : 'payment.canceled');
    const reasons = new Set(announcing.map((e) => e.effects.announce?.reason).filter((r) => r !== undefined));
    expect([...reasons].sort()).toEqual(['expired', 'ministry', 'partner']);
  });

  it("describes every event's data field in the events API's data schema", () => {
    const fields = Object.keys(EventData.properties);
    const shared = EventData.properties as Record<string, { description?: string }>;
    for (const [event, schema] of Object.entries(EVENT_DATA)) {
      for (const [name, field] of Object.entries(schema.properties)) {
        expect(fields).toContain(name);
        if (name !== 'id') {
          expect(JSON.stringify(shared[name]), `${event} ${name}`).toBe(JSON.stringify(field));
          continue;
        }
        // One id for every event: the same type, described as what it is on each kind of event.
        const { description, ...shape } = shared.id ?? {};
        const { description: own, ...ownShape } = field as { description?: string };
        expect(JSON.stringify(shape), event).toBe(JSON.stringify(ownShape));
        expect(description, event).toContain(event.startsWith('case.') ? 'on a case.* event, the case id' : own);
      }
    }
    expect((EVENT_DATA['payment.confirmed'].properties.id as { description?: string }).description).toBe('The payment id');
    expect(shared.id?.description).toMatch(/^The payment id;/);
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
