import { Agent, createServer, request, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { probe } from './http-probe.js';

/** One instance behind the balancer: where it listens and the path its health check asks. */
export interface BackendTarget {
  name: string;
  port: number;
  readyPath: string;
}

export interface BackendState extends BackendTarget {
  /** What the last health check found: only a 200 is ready. */
  ready: boolean;
  /** Requests the balancer sent it. */
  routed: number;
  /** What its health checks met, each change once: `200`, `503`, `ECONNREFUSED`, ... */
  checks: string[];
}

export interface LoadBalancer {
  url: string;
  backends: readonly BackendState[];
  /** Requests that found no ready instance (answered 503) or whose instance failed them (answered 502). */
  refused: number;
  close(): Promise<void>;
}

/** Hop-by-hop headers belong to one connection; the balancer's own connections carry their own. */
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'upgrade', 'te', 'trailer']);

function endToEnd(headers: IncomingHttpHeaders): IncomingHttpHeaders {
  return Object.fromEntries(Object.entries(headers).filter(([name]) => !HOP_BY_HOP.has(name.toLowerCase())));
}

/**
 * An HTTP load balancer on 127.0.0.1 as a cloud one or an ingress works: it health-checks each
 * instance's readiness every `checkEveryMs` (one failed check takes the instance out, one passed
 * check brings it back), sends each request to the next ready instance over keep-alive connections
 * of its own, and retries nothing: a request its instance fails is answered 502, one that finds no
 * ready instance 503, each with `x-load-balancer` saying so.
 */
export async function startLoadBalancer(targets: readonly BackendTarget[], opts: { checkEveryMs: number }): Promise<LoadBalancer> {
  const backends: BackendState[] = targets.map((t) => ({ ...t, ready: false, routed: 0, checks: [] }));
  const agents = new Map(backends.map((b) => [b.name, new Agent({ keepAlive: true })]));
  let next = 0;
  let closed = false;
  let refused = 0;

  async function check(backend: BackendState): Promise<void> {
    while (!closed) {
      const result = await probe(`http://127.0.0.1:${backend.port}${backend.readyPath}`, 1000);
      backend.ready = 'status' in result && result.status === 200;
      const met = 'status' in result ? String(result.status) : result.error;
      if (backend.checks.at(-1) !== met) backend.checks.push(met);
      await new Promise((r) => setTimeout(r, opts.checkEveryMs));
    }
  }
  const checks = backends.map((b) => check(b));

  function pick(): BackendState | null {
    for (let i = 0; i < backends.length; i++) {
      const candidate = backends[(next + i) % backends.length] as BackendState;
      if (candidate.ready) {
        next = (next + i + 1) % backends.length;
        return candidate;
      }
    }
    return null;
  }

  const server = createServer((req, res) => {
    const fail = (status: number, why: string) => {
      refused++;
      if (res.headersSent) return res.destroy();
      res.writeHead(status, { 'content-type': 'application/json', 'x-load-balancer': why }).end(JSON.stringify({ error: why }));
    };
    const backend = pick();
    if (!backend) return fail(503, 'no ready instance');
    backend.routed++;
    const upstream = request(
      { host: '127.0.0.1', port: backend.port, method: req.method, path: req.url, headers: endToEnd(req.headers), agent: agents.get(backend.name) },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, { ...endToEnd(answer.headers), 'x-backend': backend.name });
        answer.pipe(res);
        answer.on('error', () => res.destroy());
      },
    );
    upstream.on('error', (err: NodeJS.ErrnoException) => fail(502, `${backend.name}: ${err.code ?? err.message}`));
    req.pipe(upstream);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    backends,
    get refused() {
      return refused;
    },
    async close() {
      closed = true;
      await Promise.all(checks);
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      for (const agent of agents.values()) agent.destroy();
    },
  };
}
