import { AsyncLocalStorage } from 'node:async_hooks';

/** A value that follows the async context: what `run` gave it, in `fn` and in all `fn` starts. */
export interface AsyncSlot<T> {
  get(): T | undefined;
  run<R>(value: T, fn: () => R): R;
}

/**
 * Slots that share one AsyncLocalStorage. On Node 20 every instance does work of its own on every
 * promise the process creates, whether or not the promise ever reads it: about 70 ns a promise
 * (bench/README.md, "Readings of 2026-11-29, later"), and a payment's life makes some 400. So the
 * values that follow a request or a job pass (its trace context, its priority) ride in one store.
 */
export interface AsyncContext {
  /** A new slot, empty everywhere until run. */
  slot<T>(): AsyncSlot<T>;
}

export function createAsyncContext(): AsyncContext {
  const storage = new AsyncLocalStorage<readonly unknown[]>();
  let slots = 0;
  return {
    slot<T>(): AsyncSlot<T> {
      const index = slots++;
      return {
        // Only `run` below writes index `index`, and only with a T.
        get: () => storage.getStore()?.[index] as T | undefined,
        run(value, fn) {
          const values = storage.getStore()?.slice() ?? [];
          values[index] = value;
          return storage.run(values, fn);
        },
      };
    },
  };
}
