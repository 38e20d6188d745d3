import { AsyncLocalStorage } from 'node:async_hooks';

/**
 * Tells background work (job passes and what they start) from partner and operator requests,
 * through the async context, so a shared resource can serve requests first.
 */
export interface WorkPriority {
  /** Runs `fn`, and everything it starts, as background work. */
  background<T>(fn: () => Promise<T>): Promise<T>;
  isBackground(): boolean;
}

export function createWorkPriority(): WorkPriority {
  const context = new AsyncLocalStorage<true>();
  return {
    background: (fn) => context.run(true, fn),
    isBackground: () => context.getStore() === true,
  };
}
