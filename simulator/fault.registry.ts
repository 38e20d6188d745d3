/**
 * `loaded`: slow because of load, `delayMs` plus `perInFlightMs` for each request of the source in
 * flight. `late`: answered at once but delivered `delayMs` later, so what the ministry said may no
 * longer hold when the caller reads it. The oversized answers, each streamed as it is sent so the
 * simulator never holds it: `huge-members`, the route's own valid answer with one more member of
 * `size` keys in front; `huge-string`, the same with one string member of `size` characters;
 * `endless`, a 200 JSON body of 1 MiB chunks that ends only when the caller goes away.
 */
export type FaultMode = 'none' | 'error' | 'timeout' | 'slow' | 'loaded' | 'late' | 'malformed' | 'huge-members' | 'huge-string' | 'endless';

/** The modes whose answer is too large for any sane client, and their default `size`. */
export const OVERSIZE_DEFAULTS = {
  /** About 25 MB of JSON, the red team's answer. */
  'huge-members': 2_000_000,
  'huge-string': 180 * 1024 * 1024,
} as const;

export const SIM_OPERATIONS = ['search', 'invoice', 'submit', 'status', 'cancel', 'settlement'] as const;
export type SimOperation = (typeof SIM_OPERATIONS)[number];

export interface Fault {
  mode: FaultMode;
  delayMs: number;
  /** Added to the delay of a `loaded` source for each of its requests in flight, this one included. */
  perInFlightMs: number;
  /** huge-members: the extra member's keys; huge-string: its characters. */
  size?: number;
}

const NO_FAULT: Fault = { mode: 'none', delayMs: 0, perInFlightMs: 0 };
const ALL = '*';

/**
 * Faults per (source, operation). A source-wide fault means "every operation of the source", so
 * setting one replaces whatever that source had; an operation's own entry (even mode none) wins
 * over the source-wide one, which lets a test break everything but one call, or just one call.
 */
export class FaultRegistry {
  private readonly bySource = new Map<string, Map<string, Fault>>();

  set(source: string, fault: Fault, operation?: SimOperation): void {
    if (operation === undefined) {
      this.bySource.set(source, new Map([[ALL, fault]]));
      return;
    }
    const entries = this.bySource.get(source) ?? new Map<string, Fault>();
    entries.set(operation, fault);
    this.bySource.set(source, entries);
  }

  /** operation is undefined for a request no route claims (a 404): only the source-wide fault applies. */
  get(source: string, operation: SimOperation | undefined): Fault {
    const entries = this.bySource.get(source);
    return (operation && entries?.get(operation)) ?? entries?.get(ALL) ?? NO_FAULT;
  }

  clear(): void {
    this.bySource.clear();
  }
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Which ministry operation a simulated source route is, so a fault can target just that one. */
    operation?: SimOperation;
  }
}

/** Route options tagging a source route with its operation, read back by the fault hook. */
export const operation = (name: SimOperation) => ({ config: { operation: name } });
