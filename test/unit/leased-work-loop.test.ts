import { describe, expect, it } from 'vitest';
import { createLeasedWorkLoop, type WorkLane } from '../../src/work/leased-work.loop.js';
import { systemClock } from '../../src/domain/clock.port.js';

interface Item {
  id: string;
  key: string;
}

function gate() {
  let open: () => void = () => undefined;
  const promise = new Promise<void>((resolve) => (open = resolve));
  return { promise, open };
}

const silent = { info: () => undefined, warn: () => undefined, error: () => undefined };

/**
 * Two lanes over one key's work, as the webhook lanes are: the key sits in one lane at a time,
 * and each item's outcome may move it. The claims read the key's lane when they run, so a move
 * that lands between the two lanes' claims of one pass is seen by neither.
 */
function lanesOverOneKey() {
  const waiting: Item[] = [{ id: 'a', key: 'k' }, { id: 'b', key: 'k' }, { id: 'c', key: 'k' }];
  const performed: string[] = [];
  const state = { laneOfKey: 'normal' as 'normal' | 'slow', slowClaims: 0 };
  const secondHeld = gate();
  const secondDone = gate();

  function lane(name: 'normal' | 'slow', perKey: number, beforeClaim?: () => Promise<void>): WorkLane<Item> {
    return {
      name,
      perKey,
      total: 8,
      keyOf: (w) => w.key,
      idOf: (w) => w.id,
      async claim(slots) {
        await beforeClaim?.();
        const free = state.laneOfKey === name ? slots.pool.available('k') : 0;
        const claimed = waiting.splice(0, Math.min(free, waiting.length));
        const saturated = state.laneOfKey === name && waiting.length > 0 ? ['k'] : [];
        return { claimed, saturated };
      },
      async perform(w) {
        await (w.id === 'b' ? secondHeld.promise : new Promise((resolve) => setImmediate(resolve)));
        performed.push(w.id);
        const before = state.laneOfKey;
        // The first item fails (the key moves to the slow lane), the others succeed (back to normal).
        state.laneOfKey = w.id === 'a' ? 'slow' : 'normal';
        if (w.id === 'b') secondDone.open();
        return state.laneOfKey !== before;
      },
      failure: { level: 'error', message: 'failed' },
    };
  }

  // The pass after the first item's failure finds the key in the slow lane when the normal lane
  // claims; the second item then succeeds and moves it back before the slow lane claims.
  const slow = lane('slow', 1, async () => {
    state.slowClaims += 1;
    if (state.slowClaims !== 2) return;
    secondHeld.open();
    await secondDone.promise;
    await new Promise((resolve) => setImmediate(resolve));
  });
  return { lanes: [lane('normal', 2), slow] as WorkLane<unknown>[], performed, waiting };
}

describe('leased work loop', () => {
  it("claims again when finished work moves its key to another lane between two lanes' claims", async () => {
    const { lanes, performed, waiting } = lanesOverOneKey();
    const loop = createLeasedWorkLoop({ name: 'test', intervalMs: 60_000, lanes, log: silent, now: systemClock });
    await loop.run();
    await loop.drain?.();
    expect(waiting).toEqual([]);
    expect(performed).toEqual(['a', 'b', 'c']);
  });
});
