import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { createTestContext, type TestContext } from '../helpers/test-context.js';
import { buildAdminApp } from '../../src/admin-app.js';
import { operatorsOf } from '../../src/http/plugins/admin-auth.plugin.js';
import { hostAllowed, parseHostHeader } from '../../src/http/plugins/admin-access.plugin.js';

let ctx: TestContext;
let port: number;
let custom: FastifyInstance;
let customPort: number;

async function listen(app: FastifyInstance): Promise<number> {
  await app.listen({ port: 0, host: '127.0.0.1' });
  const address = app.server.address();
  return typeof address === 'object' && address ? address.port : 0;
}

beforeAll(async () => {
  ctx = await createTestContext();
  port = await listen(ctx.admin);
  // The same listener with ADMIN_ALLOWED_HOSTS=admin.internal: loopback names are then not allowed.
  custom = await buildAdminApp({ logger: ctx.deps.logger, operators: operatorsOf(ctx.config), allowedHosts: ['admin.internal'], services: ctx.deps.admin, metrics: ctx.deps.metrics });
  customPort = await listen(custom);
});
afterAll(async () => {
  await custom?.close();
  await ctx?.close();
});

/** A real request with the Host header given (fetch would not let the test choose it). */
function get(toPort: number, path: string, host: string, headers: Record<string, string> = {}): Promise<{ status: number; body: string; type: string; requestId: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port: toPort, path, headers: { ...headers, host } }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body, type: String(res.headers['content-type']), requestId: String(res.headers['x-request-id']) }));
    });
    req.on('error', reject);
    req.end();
  });
}

const MISDIRECTED = { statusCode: 421, message: 'The admin listener does not answer for this Host', error: 'Misdirected Request', code: 'misdirected_request' };
const PATHS = ['/metrics', '/', '/admin/partners', '/admin/payments?cursor=x', '/no-such-path'];

describe('the admin listener answers only for its own address and allowed names', () => {
  it.each(['attacker.example', 'attacker.example:3001', 'localhost.attacker.example', '127.0.0.1.nip.io', '10.0.0.1'])('refuses Host %j with 421 on every path', async (host) => {
    for (const path of PATHS) {
      const res = await get(port, path, host, { authorization: `Bearer ${ctx.config.adminToken}` });
      expect(res.status, `${host} ${path}`).toBe(421);
      expect(JSON.parse(res.body)).toEqual({ ...MISDIRECTED, requestId: res.requestId });
    }
  });

  it('answers its own address and the loopback names, with any port, in any case', async () => {
    for (const host of [`127.0.0.1:${port}`, `localhost:${port}`, `[::1]:${port}`, 'localhost', `LOCALHOST.:${port}`]) {
      const metrics = await get(port, '/metrics', host);
      expect(metrics.status, host).toBe(200);
      expect(metrics.body).toContain('rate_limit_rejections_total');
      const page = await get(port, '/', host);
      expect(page.status, host).toBe(200);
      expect(page.type).toMatch(/^text\/html/);
      expect((await get(port, '/admin/partners', host)).status, host).toBe(401);
    }
  });

  it('with ADMIN_ALLOWED_HOSTS, answers those names and its own address only', async () => {
    expect((await get(customPort, '/metrics', 'admin.internal')).status).toBe(200);
    expect((await get(customPort, '/metrics', 'ADMIN.internal:9999')).status).toBe(200);
    expect((await get(customPort, '/metrics', `127.0.0.1:${customPort}`)).status).toBe(200);
    expect((await get(customPort, '/metrics', `127.0.0.1:${customPort + 1}`)).status).toBe(421);
    expect((await get(customPort, '/metrics', '127.0.0.1')).status).toBe(421);
    expect((await get(customPort, '/metrics', `localhost:${customPort}`)).status).toBe(421);
  });
});

describe('Host header parsing', () => {
  it('splits names, bracketed IPv6 and ports', () => {
    expect(parseHostHeader('Example.COM.:3001')).toEqual({ name: 'example.com', port: 3001 });
    expect(parseHostHeader('[::1]:3001')).toEqual({ name: '::1', port: 3001 });
    expect(parseHostHeader('[::1]')).toEqual({ name: '::1', port: null });
    expect(parseHostHeader('localhost')).toEqual({ name: 'localhost', port: null });
  });

  it('matches the local address the connection reached, IPv4-mapped included', () => {
    const none = new Set<string>();
    expect(hostAllowed('127.0.0.1:3001', { address: '::ffff:127.0.0.1', port: 3001 }, none)).toBe(true);
    expect(hostAllowed('[::1]:3001', { address: '::1', port: 3001 }, none)).toBe(true);
    expect(hostAllowed('10.1.2.3', { address: '10.1.2.3', port: 80 }, none)).toBe(true);
    expect(hostAllowed('10.1.2.3', { address: '10.1.2.3', port: 3001 }, none)).toBe(false);
    expect(hostAllowed(undefined, { address: '127.0.0.1', port: 3001 }, new Set(['localhost']))).toBe(false);
    expect(hostAllowed('localhost:abc', { address: '127.0.0.1', port: 3001 }, new Set(['localhost']))).toBe(false);
  });
});
