import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { ROOT_CONTEXT, type Context } from '@opentelemetry/api';
import type { AsyncSlot } from '../../primitives/async-context.js';

/**
 * OpenTelemetry's active context kept in a slot of the process's one async context. On Node 20
 * every AsyncLocalStorage instance runs hooks of its own on every promise the process makes, and
 * the SDK's own manager would be a second instance beside the one the work priority already
 * keeps. This is that manager with its storage swapped: binding a callback or an event emitter
 * goes through `with` (test/unit/otel-context-manager.test.ts checks it does), and the
 * AsyncLocalStorage its constructor makes is never entered, so it never turns its hooks on.
 */
export class SlotContextManager extends AsyncLocalStorageContextManager {
  constructor(private readonly slot: AsyncSlot<Context>) {
    super();
  }

  override active(): Context {
    return this.slot.get() ?? ROOT_CONTEXT;
  }

  override with<A extends unknown[], F extends (...args: A) => ReturnType<F>>(context: Context, fn: F, thisArg?: ThisParameterType<F>, ...args: A): ReturnType<F> {
    return this.slot.run(context, () => fn.apply(thisArg, args));
  }

  /** Would enter the SDK's own storage, which nothing here reads: no instrumentation this service loads calls it. */
  override attach(): never {
    throw new Error('SlotContextManager.attach is not supported: use context.with');
  }
}
