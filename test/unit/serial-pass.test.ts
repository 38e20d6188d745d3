import { describe, expect, it } from 'vitest';
import { createSerialPass } from '../../src/work/serial-pass.js';

function gate() {
  let open: () => void = () => undefined;
  const promise = new Promise<void>((resolve) => (open = resolve));
  return { promise, open };
}

describe('serial pass', () => {
  it('never overlaps passes, and runs once more after the one in flight however many asks came', async () => {
    let running = 0;
    let most = 0;
    let passes = 0;
    const first = gate();
    const serial = createSerialPass(async () => {
      passes++;
      running++;
      most = Math.max(most, running);
      if (passes === 1) await first.promise;
      running--;
    });
    const inFlight = serial.now();
    void serial.now();
    void serial.now();
    void serial.now();
    expect(serial.busy()).toBe(true);
    first.open();
    await inFlight;
    await serial.idle();
    expect(passes).toBe(2);
    expect(most).toBe(1);
    expect(serial.busy()).toBe(false);
  });

  it('starts nothing once stopped, and stop waits for the pass in flight', async () => {
    let passes = 0;
    const first = gate();
    const serial = createSerialPass(async () => {
      passes++;
      await first.promise;
    });
    void serial.now();
    void serial.now();
    let stopped = false;
    const stopping = serial.stop().then(() => (stopped = true));
    await Promise.resolve();
    expect(stopped).toBe(false);
    first.open();
    await stopping;
    await serial.now();
    expect(passes).toBe(1);
  });

  it('keeps running after a failed pass', async () => {
    let passes = 0;
    const serial = createSerialPass(async () => {
      passes++;
      if (passes === 1) throw new Error('boom');
    });
    await expect(serial.now()).rejects.toThrow('boom');
    await serial.now();
    expect(passes).toBe(2);
  });
});
