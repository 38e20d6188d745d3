import { request } from 'node:http';

/** What one request on a connection of its own met: the answer's status and `Connection` header, or the socket error's code. */
export type ProbeResult = { status: number; connection: string | undefined } | { error: string };

/**
 * A GET on a new connection (no pool), so the answer says whether the listener still accepts
 * connections, not whether an old keep-alive one is still open.
 */
export function probe(url: string, timeoutMs = 5000): Promise<ProbeResult> {
  return new Promise((resolve) => {
    const req = request(url, { agent: false, timeout: timeoutMs }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode ?? 0, connection: res.headers.connection }));
      res.on('error', (err: NodeJS.ErrnoException) => resolve({ error: err.code ?? err.message }));
    });
    req.on('timeout', () => req.destroy(Object.assign(new Error('probe timed out'), { code: 'ETIMEDOUT' })));
    req.on('error', (err: NodeJS.ErrnoException) => resolve({ error: err.code ?? err.message }));
    req.end();
  });
}

export const isRefused = (r: ProbeResult): boolean => 'error' in r && r.error === 'ECONNREFUSED';
export const statusOf = (r: ProbeResult): number | null => ('status' in r ? r.status : null);
