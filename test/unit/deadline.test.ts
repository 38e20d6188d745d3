import { createServer, connect, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createDeadlineSweep, withDeadline } from '../../src/primitives/deadline.helper.js';

/** Blocks the event loop, as a paused process or a long synchronous task does. */
function stall(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until);
}

describe('withDeadline', () => {
  let server: Server | undefined;
  let sockets: Socket[] = [];
  afterEach(async () => {
    sockets.forEach((s) => s.destroy());
    sockets = [];
    await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
    server = undefined;
  });

  it('gives the deadline\'s answer when the work has none by then', async () => {
    await expect(withDeadline(new Promise<string>(() => {}), 10, () => 'late')).resolves.toBe('late');
    await expect(withDeadline(new Promise<string>(() => {}), 10, () => { throw new Error('deadline passed'); })).rejects.toThrow('deadline passed');
  });

  it('gives the work\'s answer, and never runs the deadline\'s, when the work answers in time', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setImmediate', 'clearImmediate'] });
    try {
      let lateRan = false;
      await expect(withDeadline(Promise.resolve('answered'), 10, () => { lateRan = true; return 'late'; })).resolves.toBe('answered');
      // The deadline's timer is gone: no time run on the test's clock reaches it.
      expect(vi.getTimerCount()).toBe(0);
      await vi.runAllTimersAsync();
      expect(lateRan).toBe(false);
    } finally {
      vi.useRealTimers();
    }
  });

  it('an answer that arrived while the process was stalled past the deadline wins over the overdue timer', async () => {
    // The answer is bytes reaching a socket of this process: the kernel holds them while the event loop is blocked.
    const received = new Promise<Socket>((resolve) => {
      server = createServer((socket) => {
        sockets.push(socket);
        resolve(socket);
      });
    });
    await new Promise<void>((resolve) => server?.listen(0, '127.0.0.1', resolve));
    const client = connect((server?.address() as AddressInfo).port, '127.0.0.1');
    sockets.push(client);
    const peer = await received;
    let lateRan = false;
    const outcome = await new Promise<Promise<string>>((resolve) =>
      // From an immediate: once it returns, the event loop runs due timers before it next polls for I/O.
      setImmediate(() => {
        const answer = new Promise<string>((settle) => peer.once('data', () => settle('answered')));
        const bounded = withDeadline(answer, 20, () => {
          lateRan = true;
          return 'late';
        });
        client.write('answer');
        stall(100);
        resolve(bounded);
      }),
    );
    expect(await outcome).toBe('answered');
    expect(lateRan).toBe(false);
  });
});

describe('a deadline shared by many works', () => {
  it('rejects a work past the deadline with its own error, leaves one answered in time alone, and gives up the rest at once when asked', async () => {
    const sweep = createDeadlineSweep(60, 10);
    try {
      const never = new Promise<string>(() => undefined);
      let answer: (v: string) => void = () => undefined;
      const answered = sweep.bound(new Promise<string>((resolve) => (answer = resolve)), () => new Error('late answered'));
      const late = sweep.bound(never, () => new Error('late never'));
      answer('yes');
      await expect(answered).resolves.toBe('yes');
      await expect(late).rejects.toThrow('late never');
      const waiting = [sweep.bound(never, () => new Error('x')), sweep.bound(never, () => new Error('y'))];
      sweep.giveUpAll(new Error('away'));
      for (const w of waiting) await expect(w).rejects.toThrow('away');
    } finally {
      sweep.stop();
    }
  });
});
