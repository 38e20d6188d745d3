import type { MinistryAdapter, MinistryAdapters } from '../../domain/ministry.port.js';
import type { Source } from '../../domain/vocabulary.js';

export type Operation = Exclude<keyof MinistryAdapter, 'source'>;
const OPERATIONS: Operation[] = ['search', 'getByRef', 'submitPayment', 'getPayment', 'cancelPayment', 'settlement'];

type Call = (...args: unknown[]) => Promise<unknown>;

/** Decorates every operation of every adapter with the same wrapper (metrics, circuit breaking). */
export function wrapAdapters(
  adapters: MinistryAdapters,
  wrapFor: (source: Source) => (op: Operation, call: Call) => Call,
): MinistryAdapters {
  const wrapOne = (adapter: MinistryAdapter): MinistryAdapter => {
    const wrap = wrapFor(adapter.source);
    const wrapped: Record<string, unknown> = { source: adapter.source };
    for (const op of OPERATIONS) wrapped[op] = wrap(op, adapter[op].bind(adapter) as Call);
    return wrapped as unknown as MinistryAdapter;
  };
  return { mof: wrapOne(adapters.mof), etax: wrapOne(adapters.etax), police: wrapOne(adapters.police) };
}
