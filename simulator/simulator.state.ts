import { CallTracker } from './call-tracker.js';
import { FaultRegistry } from './fault.registry.js';
import { SubmitDesk } from './submit.desk.js';
import { StatusCalls } from './status-calls.js';
import type { FixtureFile, InvoiceFixture } from './fixtures.schema.js';
import type { SimInvoice, SimPayment, SimSource, SearchField, SubmitCommand, SubmitOutcome } from './simulator.types.js';
import { mongoFromNumber } from './simulator.money.js';
import { financeDayOf } from './simulator.time.js';

export type { SimSource, SearchField, SimInvoice, SimPayment, SubmitOutcome, SubmitCommand } from './simulator.types.js';
export interface SettlementRow {
  payment: SimPayment;
  invoice: SimInvoice;
}

/**
 * How the ministry treats the payments of one invoice, set through the control API: approve each
 * after its own delay (auto-approval on or off), fail it some time after accepting it, or never
 * approve it; and refuse to take payments at all (as if down) until a moment.
 */
export interface InvoiceBehaviour {
  approveAfterMs?: number;
  failAfterMs?: number;
  neverApprove?: boolean;
  unavailableUntil?: number;
}

/** What the ministry may do on its own to a payment it accepted (the control API's outcomes). */
export type MinistryOutcome = 'rejected' | 'canceled' | 'unknown';

function toDate(text: string | null | undefined): Date | null {
  return text ? new Date(text) : null;
}

/** Fixtures are validated before they get here, so the amount is known to be exact. */
export function invoiceFromFixture(fixture: InvoiceFixture): SimInvoice {
  return {
    source: fixture.source,
    refNum: fixture.refNum,
    description: fixture.description,
    amountMongo: mongoFromNumber(fixture.amount) ?? 0,
    status: fixture.status,
    dueDate: toDate(fixture.dueDate),
    issuedAt: toDate(fixture.issuedAt),
    payer: fixture.payer ?? null,
    payee: fixture.payee,
    vehicleNo: fixture.vehicleNo ?? null,
    taxRef: fixture.taxRef ?? null,
    year: fixture.year ?? null,
    rejectPayment: fixture.rejectPayment ?? false,
    allowPartial: fixture.allowPartial ?? false,
    linkedRefNums: fixture.linkedRefNums ?? [],
    wire: fixture.wire ?? {},
  };
}

const keyOf = (source: SimSource, id: string): string => `${source}:${id}`;
const searchKey = (source: SimSource, field: SearchField, value: string): string => `${source}\u0000${field}\u0000${value}`;

/** In-memory ministry state shared by the three simulated systems. */
export class SimulatorState {
  private readonly invoices = new Map<string, SimInvoice>();
  private readonly payments = new Map<string, SimPayment>();
  /** Every submit answer by payment id, so a retried submit gets the same answer. */
  private readonly answers = new Map<string, SubmitOutcome>();
  private readonly timers = new Map<string, NodeJS.Timeout>();
  readonly faults = new FaultRegistry();
  /** Calls in flight per source and operation (and payment), for tests that bound them. */
  readonly calls = new CallTracker();
  readonly submits = new SubmitDesk();
  readonly statusCalls = new StatusCalls();
  /** The trace context headers of the latest ministry calls (oldest first), for tests that follow a trace. */
  readonly traceHeaders: { route: string; traceparent: string | null; tracestate: string | null }[] = [];
  /*
   * Indexes, so a simulator holding tens of thousands of invoices and payments (the benchmark's)
   * still answers at once: invoices by search field value, and the submitted payment holding each
   * invoice (by its own or a linked refNum).
   */
  private readonly bySearch = new Map<string, SimInvoice[]>();
  private readonly holders = new Map<string, SimPayment>();
  private readonly insertedAt = new Map<string, number>();
  /** Settlement controls by refNum: payments left out of the reports, amounts reported instead. */
  private readonly settlementDrops = new Set<string>();
  private readonly settlementAmounts = new Map<string, number>();
  /** Payments a settlement report has listed: paid out, so a later reversal does not unlist them. */
  private readonly reported = new Set<string>();
  /** Invoices whose view lags behind an approval, and for how long; and the views still lagging. */
  private readonly viewLags = new Map<string, number>();
  private readonly staleViews = new Map<string, { view: SimInvoice; until: number }>();
  private readonly behaviours = new Map<string, InvoiceBehaviour>();
  /** Payments whose submit came while their invoice's ministry was down, by payment key: until when it stays down to them. */
  private readonly downFor = new Map<string, number>();

  constructor(
    private readonly fixtures: FixtureFile,
    private readonly autoApproveMs: number,
  ) {
    this.reset();
  }

  reset(): void {
    this.dispose();
    this.invoices.clear();
    this.payments.clear();
    this.answers.clear();
    this.bySearch.clear();
    this.holders.clear();
    this.insertedAt.clear();
    this.settlementDrops.clear();
    this.settlementAmounts.clear();
    this.reported.clear();
    this.viewLags.clear();
    this.staleViews.clear();
    this.behaviours.clear();
    this.downFor.clear();
    this.faults.clear();
    this.calls.reset();
    this.submits.clear();
    this.statusCalls.clear();
    this.traceHeaders.length = 0;
    this.fixtures.invoices.forEach((fixture) => this.upsertInvoice(fixture));
  }

  /** Stops auto-approval timers; called when the server closes. */
  dispose(): void {
    this.timers.forEach((timer) => clearTimeout(timer));
    this.timers.clear();
  }

  upsertInvoice(fixture: InvoiceFixture): SimInvoice {
    const invoice = invoiceFromFixture(fixture);
    const key = keyOf(invoice.source, invoice.refNum);
    const previous = this.invoices.get(key);
    if (previous) this.unindex(previous);
    else this.insertedAt.set(key, this.insertedAt.size);
    this.invoices.set(key, invoice);
    this.index(invoice);
    return invoice;
  }

  search(source: SimSource, field: SearchField, value: string): SimInvoice[] {
    const found = this.bySearch.get(searchKey(source, field, value)) ?? [];
    // Insertion order, as a scan of the invoice map gives it (a replaced invoice keeps its place).
    const seq = (i: SimInvoice) => this.insertedAt.get(keyOf(i.source, i.refNum)) ?? 0;
    return [...found].sort((a, b) => seq(a) - seq(b)).map((i) => this.viewOf(i));
  }

  /**
   * From the next approval of a payment of this invoice on, the ministry's view of it (lookups,
   * searches and its own checks of a new payment) keeps showing it as it was before the approval
   * for `lagMs`: the lagging read replica of an upstream system. False for an unknown invoice.
   */
  lagViewAfterApproval(source: SimSource, refNum: string, lagMs: number): boolean {
    if (!this.getInvoice(source, refNum)) return false;
    this.viewLags.set(keyOf(source, refNum), lagMs);
    return true;
  }

  /** From now on the payments of this invoice are treated as `behaviour` says. False for an unknown invoice. */
  setBehaviour(source: SimSource, refNum: string, behaviour: InvoiceBehaviour): boolean {
    if (!this.getInvoice(source, refNum)) return false;
    this.behaviours.set(keyOf(source, refNum), behaviour);
    return true;
  }

  /**
   * Whether the ministry is down to questions about this payment: its submit came while its
   * invoice's ministry was down, and that window has not ended. A service asking meanwhile must not
   * conclude the ministry never received it, as a ministry that is down tells it nothing.
   */
  isDownFor(source: SimSource, paymentId: string): boolean {
    const until = this.downFor.get(keyOf(source, paymentId));
    if (until === undefined) return false;
    if (Date.now() < until) return true;
    this.downFor.delete(keyOf(source, paymentId));
    return false;
  }

  /** The invoice as the ministry's lookups and searches show it, a lagging view included. */
  viewInvoice(source: SimSource, refNum: string): SimInvoice | undefined {
    const invoice = this.getInvoice(source, refNum);
    return invoice && this.viewOf(invoice);
  }

  private viewOf(invoice: SimInvoice): SimInvoice {
    const key = keyOf(invoice.source, invoice.refNum);
    const stale = this.staleViews.get(key);
    if (!stale) return invoice;
    if (Date.now() < stale.until) return stale.view;
    this.staleViews.delete(key);
    return invoice;
  }

  private searchKeys(invoice: SimInvoice): string[] {
    const values: [SearchField, string | null | undefined][] = [
      ['register', invoice.payer?.register],
      ['vehicleNo', invoice.vehicleNo],
      ['taxRef', invoice.taxRef],
    ];
    return values.flatMap(([field, value]) => (value ? [searchKey(invoice.source, field, value)] : []));
  }

  private index(invoice: SimInvoice): void {
    for (const key of this.searchKeys(invoice)) {
      const list = this.bySearch.get(key);
      if (list) list.push(invoice);
      else this.bySearch.set(key, [invoice]);
    }
  }

  private unindex(invoice: SimInvoice): void {
    for (const key of this.searchKeys(invoice)) {
      const list = this.bySearch.get(key)?.filter((i) => i !== invoice) ?? [];
      if (list.length > 0) this.bySearch.set(key, list);
      else this.bySearch.delete(key);
    }
  }

  getInvoice(source: SimSource, refNum: string): SimInvoice | undefined {
    return this.invoices.get(keyOf(source, refNum));
  }

  getPayment(source: SimSource, paymentId: string): SimPayment | undefined {
    return this.payments.get(keyOf(source, paymentId));
  }

  listPayments(): SimPayment[] {
    return [...this.payments.values()];
  }

  /** A submit request as it arrives over the wire: logged, and held when a test armed a hold for its invoice. */
  async submitRequest(source: SimSource, command: SubmitCommand, closing: AbortSignal): Promise<SubmitOutcome> {
    const until = this.behaviours.get(keyOf(source, command.refNum))?.unavailableUntil;
    if (until !== undefined && Date.now() < until) {
      this.downFor.set(keyOf(source, command.paymentId), until);
      // Thrown before the ministry sees it, so the route answers 500 and no payment is taken.
      throw new Error('the ministry takes no payment for this invoice at this time');
    }
    return this.submits.take(source, command.paymentId, command.refNum, () => this.submitOnce(source, command), closing);
  }

  /** `repeat` when the payment id was submitted before: the first answer again, nothing new at the ministry. */
  private submitOnce(source: SimSource, command: SubmitCommand): { outcome: SubmitOutcome; repeat: boolean } {
    const key = keyOf(source, command.paymentId);
    const known = this.answers.get(key);
    if (known) return { outcome: known, repeat: true };
    const reason = this.rejectionReason(source, command);
    const outcome: SubmitOutcome = reason ? { accepted: false, reason } : { accepted: true, payment: this.accept(source, command) };
    this.answers.set(key, outcome);
    return { outcome, repeat: false };
  }

  private rejectionReason(source: SimSource, command: SubmitCommand): string | null {
    const invoice = this.viewInvoice(source, command.refNum);
    if (!invoice) return 'invoice not found';
    if (invoice.status === 'paid') return 'already paid';
    if (invoice.status === 'canceled') return 'canceled';
    if (invoice.rejectPayment) return 'not accepted at this time';
    if (!this.amountFits(invoice, command.amountMongo)) return 'amount does not match the invoice balance';
    if (this.inProgress(source, command.refNum)) return 'payment already in progress';
    return null;
  }

  /** The whole balance, or with part-payments allowed any positive amount up to it. */
  private amountFits(invoice: SimInvoice, amountMongo: number): boolean {
    if (amountMongo <= 0 || amountMongo > invoice.amountMongo) return false;
    return invoice.allowPartial || amountMongo === invoice.amountMongo;
  }

  private inProgress(source: SimSource, refNum: string): boolean {
    return this.holders.has(keyOf(source, refNum));
  }

  /**
   * A linked invoice may already be held by another submitted payment (the ministry accepts the
   * payment anyway); that one keeps it, so approving or canceling it still finds it.
   */
  private hold(payment: SimPayment): void {
    for (const refNum of [payment.refNum, ...payment.linkedRefNums]) {
      const key = keyOf(payment.source, refNum);
      if (!this.holders.has(key)) this.holders.set(key, payment);
    }
  }

  private release(payment: SimPayment): void {
    for (const refNum of [payment.refNum, ...payment.linkedRefNums]) {
      const key = keyOf(payment.source, refNum);
      if (this.holders.get(key) === payment) this.holders.delete(key);
    }
  }

  private accept(source: SimSource, command: SubmitCommand): SimPayment {
    const invoice = this.getInvoice(source, command.refNum);
    const payment: SimPayment = {
      source,
      paymentId: command.paymentId,
      refNum: command.refNum,
      amountMongo: command.amountMongo,
      status: 'submitted',
      linkedRefNums: [...(invoice?.linkedRefNums ?? [])],
      settled: false,
      paidLinked: false,
      submittedAt: new Date(),
      confirmedAt: null,
      canceledAt: null,
    };
    const key = keyOf(source, payment.paymentId);
    this.payments.set(key, payment);
    this.hold(payment);
    const behaviour = this.behaviours.get(keyOf(source, command.refNum)) ?? {};
    if (behaviour.failAfterMs !== undefined) this.startTimer(key, () => this.reject(payment), behaviour.failAfterMs);
    else if (behaviour.approveAfterMs !== undefined) this.startTimer(key, () => this.confirm(payment), behaviour.approveAfterMs);
    else if (this.autoApproveMs > 0 && !behaviour.neverApprove) this.startTimer(key, () => this.confirm(payment), this.autoApproveMs);
    return payment;
  }

  private startTimer(key: string, run: () => void, ms: number): void {
    const timer = setTimeout(run, ms);
    timer.unref();
    this.timers.set(key, timer);
  }

  /**
   * The submitted payment made for this invoice itself (not one that only links it). A payment
   * always holds its own invoice, since a held invoice refuses new payments, so the holder index
   * finds it without a scan.
   */
  submittedFor(refNum: string, source?: SimSource): SimPayment | undefined {
    const sources: SimSource[] = source ? [source] : ['mof', 'etax', 'police'];
    return sources
      .map((s) => this.holders.get(keyOf(s, refNum)))
      .find((candidate) => candidate?.status === 'submitted' && candidate.refNum === refNum);
  }

  /** Approves the submitted payment of an invoice; undefined when there is none, or its invoice is never to be approved. */
  approve(refNum: string, source?: SimSource): SimPayment | undefined {
    const payment = this.submittedFor(refNum, source);
    if (payment && this.behaviours.get(keyOf(payment.source, refNum))?.neverApprove) return undefined;
    if (payment) this.confirm(payment);
    return payment;
  }

  /** The ministry decides on its own about a submitted payment; see MinistryOutcome. */
  settleOutcome(payment: SimPayment, outcome: MinistryOutcome): void {
    switch (outcome) {
      case 'rejected':
        return this.reject(payment);
      case 'canceled':
        this.cancel(payment.source, payment.paymentId);
        return;
      case 'unknown':
        return this.forget(payment);
    }
  }

  /** Invoices stay as they are: the payment never paid them. */
  private reject(payment: SimPayment): void {
    if (payment.status !== 'submitted') return;
    this.stopTimer(payment);
    this.release(payment);
    payment.status = 'rejected';
  }

  /** As if the id never arrived: no status, no remembered answer, so a resubmit is a new payment. */
  private forget(payment: SimPayment): void {
    const key = keyOf(payment.source, payment.paymentId);
    this.stopTimer(payment);
    this.release(payment);
    this.payments.delete(key);
    this.answers.delete(key);
  }

  private confirm(payment: SimPayment): void {
    this.stopTimer(payment);
    if (payment.status !== 'submitted') return;
    this.release(payment);
    payment.status = 'confirmed';
    payment.confirmedAt = new Date();
    const invoice = this.getInvoice(payment.source, payment.refNum);
    const lagMs = this.viewLags.get(keyOf(payment.source, payment.refNum));
    if (invoice && lagMs !== undefined) this.staleViews.set(keyOf(invoice.source, invoice.refNum), { view: { ...invoice }, until: Date.now() + lagMs });
    if (invoice?.status === 'open' && payment.amountMongo < invoice.amountMongo) {
      // A part-payment: the rest stays owed, and the linked invoices wait for the payment that clears it.
      invoice.amountMongo -= payment.amountMongo;
      return;
    }
    payment.settled = true;
    payment.paidLinked = true;
    this.setInvoiceStatus(payment, 'paid');
  }

  /**
   * The reversed payment's amount is owed again, exactly: added to the balance of an open invoice,
   * or the balance of one a later payment had cleared (which then no longer stands as what cleared
   * it: reversed in turn, it owes back its own amount). Linked invoices reopen only if it had paid them.
   */
  private reverse(payment: SimPayment): void {
    const invoice = this.getInvoice(payment.source, payment.refNum);
    if (invoice?.status === 'open') invoice.amountMongo += payment.amountMongo;
    else if (invoice?.status === 'paid' && !payment.settled) {
      invoice.amountMongo = payment.amountMongo;
      const clearer = this.listPayments().find((p) => p !== payment && p.source === payment.source && p.refNum === payment.refNum && p.status === 'confirmed' && p.settled);
      if (clearer) clearer.settled = false;
    }
    if (invoice) invoice.status = 'open';
    if (payment.paidLinked) this.setInvoiceStatus(payment, 'open');
  }

  /**
   * Canceling a confirmed payment reverses it, so its invoices are open again; a payment that was
   * only submitted never paid them, so their status stays. Canceled and rejected are final.
   */
  cancel(source: SimSource, paymentId: string): SimPayment | undefined {
    const payment = this.getPayment(source, paymentId);
    if (!payment || payment.status === 'canceled' || payment.status === 'rejected') return payment;
    const reversal = payment.status === 'confirmed';
    this.stopTimer(payment);
    this.release(payment);
    payment.status = 'canceled';
    payment.canceledAt = new Date();
    if (reversal) this.reverse(payment);
    return payment;
  }

  private stopTimer(payment: SimPayment): void {
    const key = keyOf(payment.source, payment.paymentId);
    clearTimeout(this.timers.get(key));
    this.timers.delete(key);
  }

  private setInvoiceStatus(payment: SimPayment, status: SimInvoice['status']): void {
    for (const refNum of [payment.refNum, ...payment.linkedRefNums]) {
      const invoice = this.getInvoice(payment.source, refNum);
      if (invoice) invoice.status = status;
    }
  }

  /** From now on, the settlement reports leave out the payments of this invoice. */
  dropFromSettlement(refNum: string): void {
    this.settlementDrops.add(refNum);
  }

  /** From now on, the settlement reports give this amount for the payments of this invoice. */
  setSettlementAmount(refNum: string, amountMongo: number): void {
    this.settlementAmounts.set(refNum, amountMongo);
  }

  /**
   * Payments whose confirmation falls on financeDay (UTC+8) and that are confirmed, or were
   * reversed only after a report had listed them. The settlement controls apply.
   */
  settlement(source: SimSource, financeDay: string): SettlementRow[] {
    const listed = (payment: SimPayment) =>
      payment.status === 'confirmed' || (payment.status === 'canceled' && this.reported.has(keyOf(source, payment.paymentId)));
    return this.listPayments()
      .filter((payment) => payment.source === source && payment.confirmedAt && listed(payment) && !this.settlementDrops.has(payment.refNum))
      .filter((payment) => payment.confirmedAt && financeDayOf(payment.confirmedAt) === financeDay)
      .sort((a, b) => (a.confirmedAt?.getTime() ?? 0) - (b.confirmedAt?.getTime() ?? 0))
      .flatMap((payment) => {
        const invoice = this.getInvoice(source, payment.refNum);
        if (!invoice) return [];
        this.reported.add(keyOf(source, payment.paymentId));
        const amountMongo = this.settlementAmounts.get(payment.refNum) ?? payment.amountMongo;
        return [{ payment: { ...payment, amountMongo }, invoice }];
      });
  }
}
