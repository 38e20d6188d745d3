import type { SimSource, SubmitOutcome } from './simulator.types.js';

/** `before`: the ministry has not seen the submit yet; `after`: it has taken it, the answer is held. */
export type HoldPoint = 'before' | 'after';

/** One submit request as the ministry took it. */
export interface SubmitRecord {
  source: SimSource;
  paymentId: string;
  refNum: string;
  accepted: boolean;
  /** Answered from what the ministry remembered of the payment id: not a new submission. */
  repeat: boolean;
  at: Date;
}

export interface HeldSubmit {
  source: SimSource;
  refNum: string;
  paymentId: string;
  point: HoldPoint;
}

interface Hold {
  point: HoldPoint;
  caught: HeldSubmit | null;
  /** Set on release: the held submit answers 500 instead (at `before`, the ministry never took it). */
  fail: boolean;
  release: () => void;
  released: Promise<void>;
}

const keyOf = (source: SimSource, refNum: string): string => `${source}:${refNum}`;

/**
 * Every submit the ministry received, and submits held in the network on a test's word: the next
 * submit of an invoice waits, before the ministry sees it or after it answered, until released.
 * That is a request frozen on its way (a paused process, a stalled link) made to order.
 */
export class SubmitDesk {
  private readonly log: SubmitRecord[] = [];
  private readonly holds = new Map<string, Hold>();

  /** The next submit of the invoice waits at `point` until released. */
  hold(source: SimSource, refNum: string, point: HoldPoint): void {
    this.holds.get(keyOf(source, refNum))?.release();
    let release = () => {};
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    this.holds.set(keyOf(source, refNum), { point, caught: null, fail: false, release, released });
  }

  /** Lets the held submit of the invoice go, answered or failed (and disarms a hold that caught none); false when there was no hold. */
  release(source: SimSource, refNum: string, fail = false): boolean {
    const hold = this.holds.get(keyOf(source, refNum));
    if (!hold) return false;
    this.holds.delete(keyOf(source, refNum));
    hold.fail = fail;
    hold.release();
    return true;
  }

  /** Runs the submit, held as armed for its invoice; a closing server lets every held submit go. */
  async take(source: SimSource, paymentId: string, refNum: string, submit: () => { outcome: SubmitOutcome; repeat: boolean }, closing: AbortSignal): Promise<SubmitOutcome> {
    const hold = this.holds.get(keyOf(source, refNum));
    const catches = hold !== undefined && hold.caught === null;
    if (catches) hold.caught = { source, refNum, paymentId, point: hold.point };
    if (catches && hold.point === 'before') await this.wait(hold, closing);
    if (catches && hold.point === 'before' && hold.fail) throw new Error('the held submit failed before the ministry took it');
    const { outcome, repeat } = submit();
    this.log.push({ source, paymentId, refNum, accepted: outcome.accepted, repeat, at: new Date() });
    if (catches && hold.point === 'after') await this.wait(hold, closing);
    if (catches && hold.point === 'after' && hold.fail) throw new Error('the held submit failed after the ministry took it');
    return outcome;
  }

  private async wait(hold: Hold, closing: AbortSignal): Promise<void> {
    if (closing.aborted) return;
    await Promise.race([hold.released, new Promise<void>((resolve) => closing.addEventListener('abort', () => resolve(), { once: true }))]);
  }

  submits(refNum?: string): SubmitRecord[] {
    return this.log.filter((r) => refNum === undefined || r.refNum === refNum);
  }

  held(): HeldSubmit[] {
    return [...this.holds.values()].flatMap((h) => (h.caught ? [h.caught] : []));
  }

  clear(): void {
    this.holds.forEach((h) => h.release());
    this.holds.clear();
    this.log.length = 0;
  }
}
