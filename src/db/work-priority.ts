import { createAsyncContext, type AsyncSlot } from '../primitives/async-context.js';

/**
 * Tells background work (job passes and what they start) from partner and operator requests,
 * through the async context, and counts the requests being served, so a shared resource can
 * serve requests first and give background work the time between them.
 */
export interface WorkPriority {
  /** Runs `fn`, and everything it starts, as background work. */
  background<T>(fn: () => Promise<T>): Promise<T>;
  isBackground(): boolean;
  /** A request has begun; call what it returns, once, when its answer is sent or its client gone. */
  requestStarted(): () => void;
  /** Requests begun and not yet answered. */
  requestsInFlight(): number;
  /** Calls `fn` once, the next time no request is in flight. */
  whenIdle(fn: () => void): void;
}

/** `slot` carries the background mark; a process shares one async context among its slots (async-context.ts). */
export function createWorkPriority(slot: AsyncSlot<true> = createAsyncContext().slot()): WorkPriority {
  let inFlight = 0;
  let idleWaiters: (() => void)[] = [];
  return {
    background: (fn) => slot.run(true, fn),
    isBackground: () => slot.get() === true,
    requestStarted() {
      inFlight++;
      let done = false;
      return () => {
        if (done) return;
        done = true;
        inFlight--;
        if (inFlight > 0 || idleWaiters.length === 0) return;
        const waiters = idleWaiters;
        idleWaiters = [];
        waiters.forEach((fn) => fn());
      };
    },
    requestsInFlight: () => inFlight,
    whenIdle(fn) {
      if (inFlight === 0) fn();
      else idleWaiters.push(fn);
    },
  };
}
