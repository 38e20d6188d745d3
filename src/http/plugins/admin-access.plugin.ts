import type { FastifyInstance, FastifyRequest, onRequestAsyncHookHandler } from 'fastify';
import { ForbiddenError } from '../../domain/errors.js';
import { sendError } from './errors.plugin.js';

const LOOPBACK_CALLERS = new Set(['127.0.0.1', '::1']);

/** A host as written in a Host header or in settings: lower case, no brackets, no trailing dot, IPv4-mapped IPv6 as IPv4. */
export function normalizeHostName(name: string): string {
  const bare = name.trim().toLowerCase().replace(/^\[(.*)\]$/, '$1').replace(/\.$/, '');
  return bare.startsWith('::ffff:') && bare.includes('.') ? bare.slice('::ffff:'.length) : bare;
}

/** `example.com:3001`, `[::1]:3001` or `localhost` as its name and port (null when the header names none). */
export function parseHostHeader(header: string): { name: string; port: number | null } {
  const bracketed = /^(\[[^\]]*\])(?::(\d+))?$/.exec(header);
  const plain = /^([^:]*)(?::(\d+))?$/.exec(header);
  const match = bracketed ?? plain;
  if (!match) return { name: normalizeHostName(header), port: null };
  return { name: normalizeHostName(match[1] ?? ''), port: match[2] === undefined ? null : Number(match[2]) };
}

/** True when the Host names the address and port the connection reached, or an allowed name. */
export function hostAllowed(header: string | undefined, local: { address?: string; port?: number }, allowedNames: ReadonlySet<string>): boolean {
  if (!header) return false;
  const { name, port } = parseHostHeader(header);
  if (allowedNames.has(name)) return true;
  if (!local.address || local.port === undefined) return false;
  return name === normalizeHostName(local.address) && (port ?? 80) === local.port;
}

/**
 * The admin listener answers only requests addressed to it: a page on another origin whose name
 * was rebound to this address (DNS rebinding) sends its own name as Host and gets 421 on every
 * path, /metrics and the console included. Registered first, so nothing else runs for them.
 */
export function registerAdminHostCheck(app: FastifyInstance, allowedHosts: readonly string[]): void {
  const allowedNames = new Set(allowedHosts.map(normalizeHostName));
  app.addHook('onRequest', async (request, reply) => {
    const local = { address: request.socket.localAddress, port: request.socket.localPort };
    if (hostAllowed(request.headers.host, local, allowedNames)) return;
    return sendError(reply, 'misdirected_request', 'The admin listener does not answer for this Host');
  });
}

/**
 * For the console page: a listener bound wider than loopback (to let Prometheus scrape /metrics)
 * still does not hand the console to the network.
 */
export const loopbackCallersOnly: onRequestAsyncHookHandler = async (request: FastifyRequest) => {
  if (!LOOPBACK_CALLERS.has(normalizeHostName(request.socket.remoteAddress ?? ''))) {
    throw new ForbiddenError('The operator console answers loopback callers only');
  }
};
