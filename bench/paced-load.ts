import { connect, type Socket } from 'node:net';
import { monitorEventLoopDelay, PerformanceObserver } from 'node:perf_hooks';
import { watchSteal, type StealReport } from './cpu-steal.js';

export interface PacedRequest {
  method: 'GET' | 'POST';
  path: string;
  headers: Record<string, string>;
  body?: string;
}

export interface PacedResult {
  sent: number;
  non2xx: number;
  errors: number;
  p50: number;
  p99: number;
  /** How late the generator itself sent its requests (p99, ms): above a few ms the client, not the server, limits the run. */
  sendLagP99: number;
  /** Wall-clock start of the measured phase (epoch ms), to line the windows up with other logs (PostgreSQL's, perf's). */
  startedAtMs: number;
  /** The 100 ms windows (by scheduled send time, ms from the start) holding the slowest answers. */
  slowWindows: { atMs: number; maxMs: number; overP99: number }[];
  /** The client's own pauses during the run (ms): a GC or a blocked loop here delays answers it has already received. */
  clientPause: { maxGcMs: number; maxLoopDelayMs: number; gcOver10Ms: { atMs: number; ms: number }[] };
  /** CPU time the VM's hypervisor took from this machine during the phase. */
  steal: StealReport;
}

const HEADER_END = Buffer.from('\r\n\r\n');

/** The length of one complete HTTP/1.1 response at the start of `buf` (Fastify always sends Content-Length), or -1. */
function responseLength(buf: Buffer): number {
  const end = buf.indexOf(HEADER_END);
  if (end < 0) return -1;
  const head = buf.toString('latin1', 0, end);
  const match = /\r\ncontent-length:\s*(\d+)/i.exec(head);
  const total = end + 4 + Number(match?.[1] ?? 0);
  return buf.length >= total ? total : -1;
}

function encode(host: string, req: PacedRequest): Buffer {
  const body = req.body ?? '';
  const lines = [`${req.method} ${req.path} HTTP/1.1`, `host: ${host}`, 'connection: keep-alive'];
  for (const [name, value] of Object.entries(req.headers)) lines.push(`${name}: ${value}`);
  if (req.method === 'POST') lines.push(`content-length: ${Buffer.byteLength(body)}`);
  return Buffer.from(`${lines.join('\r\n')}\r\n\r\n${body}`);
}

interface Conn {
  socket: Socket;
  buf: Buffer;
  /** When the request on the wire was scheduled to leave; null when the connection is idle. */
  scheduledAt: number | null;
  /** Called instead of recording when the answer to the connection's unmeasured first request arrives. */
  warmed?: () => void;
}

/**
 * Open-loop load at a fixed rate over raw keep-alive sockets: requests leave on a steady schedule
 * whatever the answers, and each latency runs from the moment the schedule meant to send it, so a
 * slow answer also counts against the requests queued behind it. autocannon's `overallRate` instead
 * lets each connection send its per-second quota back to back at the start of every second (full
 * load in bursts) and then pads its histogram with made-up samples. The client is kept lean, with
 * no HTTP library, so that on a shared two-core machine it does not itself become the bottleneck.
 */
export async function pacedLoad(origin: string, ratePerS: number, durationS: number, next: () => PacedRequest, connections = 64): Promise<PacedResult> {
  const url = new URL(origin);
  const latencies: number[] = [];
  const sentAt: number[] = [];
  const lags: number[] = [];
  const queue: number[] = [];
  let non2xx = 0;
  let errors = 0;
  let done = 0;
  const idle: Conn[] = [];

  const send = (conn: Conn, scheduledAt: number) => {
    conn.scheduledAt = scheduledAt;
    conn.socket.write(encode(url.host, next()));
  };

  const conns = await Promise.all(
    Array.from({ length: connections }, () =>
      new Promise<Conn>((resolve, reject) => {
        const socket = connect(Number(url.port), url.hostname);
        socket.setNoDelay(true);
        const conn: Conn = { socket, buf: Buffer.alloc(0), scheduledAt: null };
        socket.once('connect', () => resolve(conn));
        socket.once('error', reject);
        socket.on('data', (chunk: Buffer) => {
          conn.buf = conn.buf.length === 0 ? chunk : Buffer.concat([conn.buf, chunk]);
          const len = responseLength(conn.buf);
          if (len < 0 || conn.scheduledAt === null) return;
          if (conn.warmed) {
            conn.buf = conn.buf.subarray(len);
            conn.scheduledAt = null;
            conn.warmed();
            conn.warmed = undefined;
            return;
          }
          const status = Number(conn.buf.toString('latin1', 9, 12));
          if (status < 200 || status >= 300) non2xx++;
          latencies.push(performance.now() - conn.scheduledAt);
          sentAt.push(conn.scheduledAt);
          conn.buf = conn.buf.subarray(len);
          conn.scheduledAt = null;
          done++;
          const waiting = queue.shift();
          if (waiting !== undefined) send(conn, waiting);
          else idle.push(conn);
        });
      }),
    ),
  );
  for (const conn of conns) {
    conn.socket.on('error', () => {
      errors++;
    });
  }
  // One unmeasured request per connection first, so the measured phase does not open with the
  // first requests of 64 new connections arriving at once. A connection the server closes instead
  // of answering must not hold the run: its later requests count as errors.
  await Promise.all(conns.map((conn) => new Promise<void>((resolve) => {
    conn.warmed = resolve;
    conn.socket.once('close', () => resolve());
    send(conn, performance.now());
  })));
  idle.push(...conns);

  const total = Math.floor(ratePerS * durationS);
  const start = performance.now();
  const gcPauses: { atMs: number; ms: number }[] = [];
  const gcObserver = new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) gcPauses.push({ atMs: Math.round(entry.startTime - start), ms: Math.round(entry.duration * 10) / 10 });
  });
  gcObserver.observe({ entryTypes: ['gc'] });
  const loopDelay = monitorEventLoopDelay({ resolution: 5 });
  loopDelay.enable();
  const stealWatch = watchSteal(start);
  let scheduled = 0;
  while (scheduled < total) {
    const due = Math.min(total, Math.floor(((performance.now() - start) / 1000) * ratePerS));
    for (; scheduled < due; scheduled++) {
      const at = start + (scheduled / ratePerS) * 1000;
      const conn = idle.pop();
      if (!conn) {
        queue.push(at);
        continue;
      }
      lags.push(performance.now() - at);
      send(conn, at);
    }
    // A 1 ms tick: requests due within it leave together, and the client never spins a core.
    await new Promise((r) => setTimeout(r, 1));
  }
  const deadline = performance.now() + 30_000;
  while (done + errors < total && performance.now() < deadline) await new Promise((r) => setTimeout(r, 5));
  for (const conn of conns) conn.socket.destroy();
  gcObserver.disconnect();
  loopDelay.disable();
  const steal = stealWatch.stop();
  const clientPause = {
    maxGcMs: Math.max(0, ...gcPauses.map((g) => g.ms)),
    maxLoopDelayMs: Math.round(loopDelay.max / 1e5) / 10,
    gcOver10Ms: gcPauses.filter((g) => g.ms > 10),
  };

  const pick = (list: number[], q: number) => Math.round((list[Math.min(list.length - 1, Math.floor(q * list.length))] ?? 0) * 10) / 10;
  const slowWindows = windowsOver(sentAt.map((at) => at - start), latencies, pick([...latencies].sort((a, b) => a - b), 0.99));
  latencies.sort((a, b) => a - b);
  lags.sort((a, b) => a - b);
  return { sent: scheduled, non2xx, errors: Math.max(errors, total - done), p50: pick(latencies, 0.5), p99: pick(latencies, 0.99), sendLagP99: pick(lags, 0.99), startedAtMs: Math.round(performance.timeOrigin + start), slowWindows, clientPause, steal };
}

/** Groups the answers slower than p99 by 100 ms of send time: one stall shows as one or two windows. */
function windowsOver(offsets: number[], latencies: number[], p99: number): PacedResult['slowWindows'] {
  const windows = new Map<number, { atMs: number; maxMs: number; overP99: number }>();
  offsets.forEach((offset, i) => {
    const ms = latencies[i] ?? 0;
    if (ms < p99) return;
    const at = Math.floor(offset / 100) * 100;
    const w = windows.get(at) ?? { atMs: at, maxMs: 0, overP99: 0 };
    w.maxMs = Math.max(w.maxMs, Math.round(ms));
    w.overP99++;
    windows.set(at, w);
  });
  return [...windows.values()].sort((a, b) => b.overP99 - a.overP99).slice(0, 5);
}
