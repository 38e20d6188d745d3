import { createServer, connect, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';

/**
 * A TCP proxy on 127.0.0.1 in front of a real server (PostgreSQL), which a test can cut or silence
 * without touching the server that other suites share:
 * - `cut()` resets every open connection and refuses new ones until `restore()`, as a database
 *   restart looks to a client;
 * - `silence()` stops forwarding on every open connection for good, without closing it, and holds
 *   new connections (accepted, nothing forwarded) until `restore()`, as a failover that never
 *   closes the old primary's sockets looks to a client.
 */
export interface TcpProxy {
  port: number;
  cut(): void;
  silence(): void;
  restore(): void;
  close(): Promise<void>;
}

interface Pair {
  client: Socket;
  upstream: Socket | null;
}

export async function startTcpProxy(target: { host: string; port: number }): Promise<TcpProxy> {
  const open = new Set<Socket>();
  /** Connections accepted while silenced, waiting for `restore()`. */
  const held: Pair[] = [];
  let mode: 'up' | 'down' | 'silent' = 'up';

  function forward(pair: Pair): void {
    const { client } = pair;
    const upstream = connect(target.port, target.host);
    pair.upstream = upstream;
    open.add(upstream);
    const drop = () => {
      open.delete(client);
      open.delete(upstream);
      client.destroy();
      upstream.destroy();
    };
    client.on('error', drop).on('close', drop);
    upstream.on('error', drop).on('close', drop);
    client.pipe(upstream);
    upstream.pipe(client);
  }

  const server = createServer((client) => {
    if (mode === 'down') return client.resetAndDestroy();
    open.add(client);
    const pair: Pair = { client, upstream: null };
    if (mode === 'silent') {
      client.on('error', () => client.destroy());
      client.pause();
      held.push(pair);
      return;
    }
    forward(pair);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    cut() {
      mode = 'down';
      for (const socket of open) socket.resetAndDestroy();
      open.clear();
    },
    silence() {
      mode = 'silent';
      // Nothing more passes either way, and nobody is told: the sockets stay open.
      for (const socket of open) {
        socket.unpipe();
        socket.pause();
      }
    },
    restore() {
      mode = 'up';
      for (const pair of held.splice(0)) {
        pair.client.resume();
        forward(pair);
      }
    },
    async close() {
      mode = 'down';
      for (const socket of open) socket.destroy();
      for (const pair of held.splice(0)) pair.client.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
