import { createServer, connect, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { withDeadline } from '../../src/work/deadline.helper.js';

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
    let lateRan = false;
    await expect(withDeadline(Promise.resolve('answered'), 10, () => { lateRan = true; return 'late'; })).resolves.toBe('answered');
    await new Promise((resolve) => setTimeout(resolve, 30));
    expect(lateRan).toBe(false);
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
