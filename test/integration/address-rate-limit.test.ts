import { randomInt } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify';
import type { KyselyPlugin } from 'kysely';
import { createTestContext, type TestContext } from '../helpers/test-context.js';
import { partnerWithPayment } from '../helpers/api.js';
import { buildApp } from '../../src/app.js';
import { createPartnerRepository } from '../../src/db/repositories/partner.repository.js';
import { createPartnerService } from '../../src/services/partner.service.js';
import { generateApiKey } from '../../src/domain/api-key.js';

const AUTH_FAILURES = 5;
const SHORT_LINKS = 4;

let ctx: TestContext;
// The limiters' own clock, moved only by the tests, so real time passing never slides a window.
let limiterNow = 1_750_000_000_000;
/** The SQL statements the partner service sent (the only reads authentication makes). */
const statements: string[] = [];
/** The partner API with its key lookups counted. */
let api: FastifyInstance;

/** Counts every statement built through the database handle it is attached to. */
const countingPlugin: KyselyPlugin = {
  transformQuery(args) {
    statements.push(args.node.kind);
    return args.node;
  },
  transformResult: async (args) => args.result,
};

beforeAll(async () => {
  ctx = await createTestContext({
    config: { authFailuresPerMinute: AUTH_FAILURES, shortLinkRateLimitPerMinute: SHORT_LINKS },
    rateLimitClock: () => limiterNow,
    // Other suites' failed authentications from 127.0.0.1 sit in a shared Redis at real time, which
    // this test's clock, set in the past, would count as inside its window.
    rateLimitNamespace: `t${randomInt(1e9)}:`,
  });
  // No auth cache: every made-up key would be a read, so only the limit keeps the count down.
  const partners = createPartnerService({
    partners: createPartnerRepository(ctx.deps.db.withPlugin(countingPlugin), ctx.now),
    appEnv: ctx.config.appEnv,
    keyRotationGraceMs: 0,
    authCacheTtlMs: 0,
    now: ctx.now,
  });
  api = await buildApp({ logger: ctx.deps.logger, bodyLimitBytes: ctx.config.bodyLimitBytes, services: { ...ctx.deps.services, partners }, isDbReady: ctx.deps.isDbReady });
});
afterAll(async () => {
  await api?.close();
  await ctx?.close();
});

/** A client address of the test's own: limits are per address, and Redis outlives a run. */
const newAddress = () => `10.${randomInt(256)}.${randomInt(256)}.${randomInt(1, 255)}`;

const summary = (remoteAddress: string, apiKey: string | null): Promise<LightMyRequestResponse> =>
  api.inject({ method: 'GET', url: '/api/v1/reports/summary', remoteAddress, headers: apiKey === null ? {} : { 'x-api-key': apiKey } });

const TOO_MANY_FAILURES = { statusCode: 429, message: 'Too many failed authentications from this address', error: 'Too Many Requests', code: 'rate_limited' };

describe('failed authentications per client address', () => {
  it('refuses the address with 429 after AUTH_FAILURES_PER_MINUTE failures, before any database read', async () => {
    const address = newAddress();
    for (let i = 0; i < AUTH_FAILURES; i++) expect((await summary(address, generateApiKey('sandbox'))).statusCode).toBe(401);
    expect(statements).not.toHaveLength(0);
    statements.length = 0;

    for (let i = 0; i < 50; i++) {
      const res = await summary(address, generateApiKey('sandbox'));
      expect(res.statusCode).toBe(429);
      expect(res.json()).toEqual({ ...TOO_MANY_FAILURES, requestId: res.headers['x-request-id'] });
      expect(res.headers['retry-after']).toBe('60');
    }
    expect(statements).toEqual([]);
  });

  it('holds a flood of distinct made-up keys to as many reads as the limit', async () => {
    statements.length = 0;
    const address = newAddress();
    const codes = [];
    for (let i = 0; i < 200; i++) codes.push((await summary(address, generateApiKey('sandbox'))).statusCode);
    expect(codes.filter((c) => c === 401)).toHaveLength(AUTH_FAILURES);
    expect(codes.filter((c) => c === 429)).toHaveLength(200 - AUTH_FAILURES);
    expect(statements).toHaveLength(AUTH_FAILURES);
  });

  it('does not count successful authentications, counts missing keys, and refuses a good key once the address is over', async () => {
    const { apiKey } = await ctx.partner();
    const address = newAddress();
    for (let i = 0; i < 3 * AUTH_FAILURES; i++) expect((await summary(address, apiKey)).statusCode).toBe(200);
    for (let i = 0; i < AUTH_FAILURES - 1; i++) expect((await summary(address, generateApiKey('sandbox'))).statusCode).toBe(401);
    expect((await summary(address, null)).statusCode).toBe(401);
    expect((await summary(address, apiKey)).statusCode).toBe(429);
    // Another address is not affected.
    expect((await summary(newAddress(), apiKey)).statusCode).toBe(200);
  });

  it('lets the address in again as the failures leave the minute', async () => {
    const { apiKey } = await ctx.partner();
    const address = newAddress();
    for (let i = 0; i < AUTH_FAILURES; i++) {
      expect((await summary(address, generateApiKey('sandbox'))).statusCode).toBe(401);
      limiterNow += 10_000;
    }
    const refused = await summary(address, apiKey);
    expect(refused.statusCode).toBe(429);
    expect(refused.headers['retry-after']).toBe('10');
    limiterNow += 10_000;
    expect((await summary(address, apiKey)).statusCode).toBe(200);
  });

  it('counts the IPv6 clients of one /64 together', async () => {
    const prefix = `2001:db8:${randomInt(65536).toString(16)}:${randomInt(65536).toString(16)}`;
    for (let i = 1; i <= AUTH_FAILURES; i++) expect((await summary(`${prefix}::${i}`, generateApiKey('sandbox'))).statusCode).toBe(401);
    expect((await summary(`${prefix}::ffff`, generateApiKey('sandbox'))).statusCode).toBe(429);
  });

  it('answers the 429 in the OpenAPI document’s terms', async () => {
    const { apiKey } = await ctx.partner();
    const address = newAddress();
    for (let i = 0; i < AUTH_FAILURES; i++) {
      expect((await ctx.api(generateApiKey('sandbox'), { method: 'GET', url: '/api/v1/reports/summary', remoteAddress: address })).statusCode).toBe(401);
    }
    const res = await ctx.api(apiKey, { method: 'GET', url: '/api/v1/reports/summary', remoteAddress: address });
    expect(res.statusCode).toBe(429);
  });
});

describe('the QR landing page per client address', () => {
  let paymentId: string;
  beforeAll(async () => {
    paymentId = (await partnerWithPayment(ctx, 'mof')).payment.id;
  });

  const open = (remoteAddress: string, path: string, extra: Partial<InjectOptions> = {}) => ctx.app.inject({ method: 'GET', url: path, remoteAddress, ...extra });

  it('answers SHORT_LINK_RATE_LIMIT_PER_MINUTE pages, then an HTML 429 with Retry-After', async () => {
    const address = newAddress();
    for (let i = 0; i < SHORT_LINKS; i++) expect((await open(address, `/q/${paymentId}`)).statusCode).toBe(200);
    const refused = await open(address, `/q/${paymentId}`);
    expect(refused.statusCode).toBe(429);
    expect(refused.headers['content-type']).toMatch(/^text\/html/);
    expect(refused.headers['retry-after']).toBe('60');
    expect(refused.headers['cache-control']).toBe('no-store');
    expect(refused.body).toContain('429');
    expect(refused.body).toContain('Too many requests');
    expect((await open(newAddress(), `/q/${paymentId}`)).statusCode).toBe(200);
  });

  it('counts the status poll with the page, and refuses it in the JSON error shape', async () => {
    const address = newAddress();
    expect((await open(address, `/q/${paymentId}`)).statusCode).toBe(200);
    for (let i = 1; i < SHORT_LINKS; i++) expect((await open(address, `/q/${paymentId}/status`)).json()).toEqual({ status: 'submitted' });
    const refused = await open(address, `/q/${paymentId}/status`);
    expect(refused.statusCode).toBe(429);
    expect(refused.json()).toEqual({ statusCode: 429, message: 'Too Many Requests', error: 'Too Many Requests', code: 'rate_limited', requestId: refused.headers['x-request-id'] });
    expect(refused.headers['retry-after']).toBe('60');
    expect((await open(address, `/q/${paymentId}`)).statusCode).toBe(429);
  });

  it('counts unknown payment ids too, and recovers as the minute slides', async () => {
    const address = newAddress();
    for (let i = 0; i < SHORT_LINKS; i++) {
      expect((await open(address, '/q/00000000-0000-4000-8000-000000000000')).statusCode).toBe(404);
      limiterNow += 1000;
    }
    const refused = await open(address, `/q/${paymentId}/status`);
    expect(refused.statusCode).toBe(429);
    expect(refused.headers['retry-after']).toBe('56');
    limiterNow += 56_000;
    expect((await open(address, `/q/${paymentId}/status`)).statusCode).toBe(200);
  });

  it('is not limited by the partner API traffic of the same address, nor limits it', async () => {
    const { apiKey } = await ctx.partner();
    const address = newAddress();
    for (let i = 0; i < SHORT_LINKS; i++) expect((await open(address, `/q/${paymentId}/status`)).statusCode).toBe(200);
    expect((await open(address, `/q/${paymentId}/status`)).statusCode).toBe(429);
    expect((await ctx.api(apiKey, { method: 'GET', url: '/api/v1/reports/summary', remoteAddress: address })).statusCode).toBe(200);
  });
});

describe('behind a proxy (TRUST_PROXY)', () => {
  let proxied: FastifyInstance;
  beforeAll(async () => {
    proxied = await buildApp({
      logger: ctx.deps.logger,
      bodyLimitBytes: ctx.config.bodyLimitBytes,
      services: ctx.deps.services,
      isDbReady: ctx.deps.isDbReady,
      trustProxy: '127.0.0.1',
    });
  });
  afterAll(() => proxied?.close());

  const viaProxy = (client: string, proxy = '127.0.0.1') =>
    proxied.inject({ method: 'GET', url: '/q/00000000-0000-4000-8000-000000000000/status', remoteAddress: proxy, headers: { 'x-forwarded-for': client } });

  it('limits the client the trusted proxy names, not the proxy', async () => {
    const client = newAddress();
    for (let i = 0; i < SHORT_LINKS; i++) expect((await viaProxy(client)).statusCode).toBe(404);
    expect((await viaProxy(client)).statusCode).toBe(429);
    expect((await viaProxy(newAddress())).statusCode).toBe(404);
  });

  it('ignores X-Forwarded-For from an address it does not trust', async () => {
    const untrusted = newAddress();
    for (let i = 0; i < SHORT_LINKS; i++) expect((await viaProxy(newAddress(), untrusted)).statusCode).toBe(404);
    expect((await viaProxy(newAddress(), untrusted)).statusCode).toBe(429);
  });
});
