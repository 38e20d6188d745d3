import { performance } from 'node:perf_hooks';
import { Agent, request } from 'undici';
import { ipLiteral, isPublicAddress } from '../domain/webhook-target.js';
import { publicOnlyLookup } from './webhook-target.guard.js';

export type PostResult =
  | { ok: true; statusCode: number; durationMs: number }
  | { ok: false; statusCode: number | null; durationMs: number; error: string };

export interface WebhookHttpClient {
  post(url: string, body: string, headers: Record<string, string>): Promise<PostResult>;
  close(): Promise<void>;
}

function describeError(err: unknown, timeoutMs: number): string {
  const e = err as { name?: string; code?: string; message?: string; cause?: { code?: string; message?: string } };
  if (e.name === 'TimeoutError' || e.name === 'AbortError') return `timeout after ${timeoutMs} ms`;
  const code = e.code ?? e.cause?.code;
  if (code === 'EBLOCKEDTARGET') return e.message ?? 'target address is not allowed';
  return code ? `${code}: ${e.message ?? e.cause?.message ?? 'request failed'}` : (e.message ?? 'request failed');
}

/**
 * Outbound webhook POSTs: one overall deadline per attempt, redirects never followed (undici's
 * request does not follow them), and outside development only public addresses are dialled.
 */
export function createWebhookHttpClient(opts: { timeoutMs: number; allowPrivate: boolean }): WebhookHttpClient {
  const agent = new Agent({
    headersTimeout: opts.timeoutMs,
    bodyTimeout: opts.timeoutMs,
    connect: { timeout: opts.timeoutMs, ...(opts.allowPrivate ? {} : { lookup: publicOnlyLookup }) },
  });

  function literalBlocked(url: string): boolean {
    // Literal IPs never reach the lookup hook, so they are checked here.
    const literal = ipLiteral(new URL(url).hostname);
    return !opts.allowPrivate && literal !== null && !isPublicAddress(literal);
  }

  return {
    async post(url, body, headers) {
      const started = performance.now();
      const elapsed = () => performance.now() - started;
      if (literalBlocked(url)) return { ok: false, statusCode: null, durationMs: 0, error: 'target address is not allowed' };
      try {
        const res = await request(url, { method: 'POST', body, headers, dispatcher: agent, signal: AbortSignal.timeout(opts.timeoutMs) });
        await res.body.dump();
        const ok = res.statusCode >= 200 && res.statusCode < 300;
        return ok
          ? { ok, statusCode: res.statusCode, durationMs: elapsed() }
          : { ok, statusCode: res.statusCode, durationMs: elapsed(), error: `HTTP ${res.statusCode}` };
      } catch (err) {
        return { ok: false, statusCode: null, durationMs: elapsed(), error: describeError(err, opts.timeoutMs) };
      }
    },
    close: () => agent.close(),
  };
}
