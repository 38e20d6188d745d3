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
  /** Connections accepted while silenced that are still open, waiting for `restore()`. */
  heldOpen(): number;
  close(): Promise<void>;
}

interface Pair {
  client: Socket;
  upstream: Socket | null;
  /** What a held client sent before `restore()`, passed on first. */
  pending: Buffer[];
  keep?: (chunk: Buffer) => void;
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
    if (pair.keep) client.off('data', pair.keep);
    for (const chunk of pair.pending.splice(0)) upstream.write(chunk);
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
    const pair: Pair = { client, upstream: null, pending: [] };
    if (mode === 'silent') {
      // Read and kept rather than left unread, so a client that gives up waiting is seen to go
      // (a paused socket never sees its peer's end) and is forgotten: forwarded on restore(), its
      // upstream connection would stay open with nobody at the other end.
      pair.keep = (chunk) => pair.pending.push(chunk);
      client.on('data', pair.keep);
      client.on('error', () => client.destroy());
      client.on('end', () => {
        if (!pair.upstream) client.destroy();
      });
      client.on('close', () => {
        open.delete(client);
        const at = held.indexOf(pair);
        if (at >= 0) held.splice(at, 1);
      });
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
      for (const pair of held.splice(0)) forward(pair);
    },
    heldOpen: () => held.length,
    async close() {
      mode = 'down';
      for (const socket of open) socket.destroy();
      for (const pair of held.splice(0)) pair.client.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** A proxy in front of the PostgreSQL at `databaseUrl`, and the same URL through it. */
export async function startDatabaseProxy(databaseUrl: string): Promise<{ proxy: TcpProxy; url: string }> {
  const target = new URL(databaseUrl);
  const proxy = await startTcpProxy({ host: target.hostname, port: Number(target.port || 5432) });
  const url = new URL(target);
  url.host = `127.0.0.1:${proxy.port}`;
  return { proxy, url: url.toString() };
}
