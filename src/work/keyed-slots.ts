/**
 * Slots per key (a ministry system) that several kinds of work take from: the confirmation job's
 * pool and a partner's live status check count against one cap, so together they never have more
 * calls in flight to a system than its limit allows.
 */
export interface KeyedSlots {
  /** Slots `key` has free now. */
  available(key: string): number;
  /** Slots of `key` taken now. */
  inUse(key: string): number;
  /** Takes one of `key`'s slots; null when none is free. The function returned gives it back (only its first call counts). */
  tryTake(key: string): (() => void) | null;
}

/** `perKey` is a fixed cap, or one read each time a slot may be taken (a limit that adapts). */
export function createKeyedSlots(perKey: number | ((key: string) => number)): KeyedSlots {
  const taken = new Map<string, number>();
  const cap = typeof perKey === 'number' ? () => perKey : perKey;
  const inUse = (key: string) => taken.get(key) ?? 0;
  const available = (key: string) => Math.max(0, cap(key) - inUse(key));

  return {
    available,
    inUse,
    tryTake(key) {
      if (available(key) <= 0) return null;
      taken.set(key, inUse(key) + 1);
      let given = false;
      return () => {
        if (given) return;
        given = true;
        const left = inUse(key) - 1;
        if (left > 0) taken.set(key, left);
        else taken.delete(key);
      };
    },
  };
}
