import { randomInt } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LightMyRequestResponse } from 'fastify';
import { createTestContext, type TestContext } from '../helpers/test-context.js';
import { generateApiKey } from '../../src/domain/api-key.js';

const AUTH_FAILURES = 5;
const NAMED_TOKEN = 'dorj-8ch';

let ctx: TestContext;
// The limiters' own clock, moved only by the tests, so real time passing never slides a window.
let limiterNow = 1_750_000_000_000;

beforeAll(async () => {
  ctx = await createTestContext({
    config: { authFailuresPerMinute: AUTH_FAILURES, adminTokens: [{ name: 'dorj', token: NAMED_TOKEN }] },
    rateLimitClock: () => limiterNow,
    // Other suites' failures from 127.0.0.1 sit in a shared Redis at real time (see address-rate-limit.test.ts).
    rateLimitNamespace: `t${randomInt(1e9)}:`,
  });
});
afterAll(() => ctx?.close());

/** A client address of the test's own: limits are per address, and Redis outlives a run. */
const newAddress = () => `10.${randomInt(256)}.${randomInt(256)}.${randomInt(1, 255)}`;

const partners = (remoteAddress: string, token: string | null): Promise<LightMyRequestResponse> =>
  ctx.admin.inject({ method: 'GET', url: '/admin/partners', remoteAddress, headers: token === null ? {} : { authorization: `Bearer ${token}` } });

const TOO_MANY_FAILURES = { statusCode: 429, message: 'Too many failed authentications from this address', error: 'Too Many Requests', code: 'rate_limited' };

describe('wrong operator tokens per client address', () => {
  it('answers 401 to AUTH_FAILURES_PER_MINUTE wrong tokens, then 429 with Retry-After, the right token included', async () => {
    const address = newAddress();
    const codes: number[] = [];
    for (let i = 0; i < 80; i++) {
      const res = await partners(address, `guess-${i.toString().padStart(3, '0')}`);
      codes.push(res.statusCode);
      if (res.statusCode !== 429) continue;
      expect(res.json()).toEqual({ ...TOO_MANY_FAILURES, requestId: res.headers['x-request-id'] });
      expect(res.headers['retry-after']).toBe('60');
    }
    expect(codes.filter((c) => c === 401)).toHaveLength(AUTH_FAILURES);
    expect(codes.filter((c) => c === 429)).toHaveLength(80 - AUTH_FAILURES);
    // A guess that hits is refused like the others: the limit gives nothing away.
    expect((await partners(address, NAMED_TOKEN)).statusCode).toBe(429);
    expect((await partners(address, ctx.config.adminToken)).statusCode).toBe(429);
    // Another address is not affected.
    expect((await partners(newAddress(), NAMED_TOKEN)).statusCode).toBe(200);
  });

  it('counts a missing or malformed Authorization header, not the right tokens', async () => {
    const address = newAddress();
    for (let i = 0; i < 3 * AUTH_FAILURES; i++) expect((await partners(address, ctx.config.adminToken)).statusCode).toBe(200);
    for (let i = 0; i < AUTH_FAILURES - 1; i++) expect((await partners(address, null)).statusCode).toBe(401);
    expect((await ctx.admin.inject({ method: 'GET', url: '/admin/partners', remoteAddress: address, headers: { authorization: ctx.config.adminToken } })).statusCode).toBe(401);
    expect((await partners(address, ctx.config.adminToken)).statusCode).toBe(429);
  });

  it('lets the address in again as the failures leave the minute', async () => {
    const address = newAddress();
    for (let i = 0; i < AUTH_FAILURES; i++) {
      expect((await partners(address, 'wrong')).statusCode).toBe(401);
      limiterNow += 10_000;
    }
    const refused = await partners(address, NAMED_TOKEN);
    expect(refused.statusCode).toBe(429);
    expect(refused.headers['retry-after']).toBe('10');
    limiterNow += 10_000;
    expect((await partners(address, NAMED_TOKEN)).statusCode).toBe(200);
  });

  it('keeps its count apart from the partner API’s failed authentications', async () => {
    const { apiKey } = await ctx.partner();
    const summary = (remoteAddress: string, key: string) => ctx.app.inject({ method: 'GET', url: '/api/v1/reports/summary', remoteAddress, headers: { 'x-api-key': key } });

    const operatorGuesser = newAddress();
    for (let i = 0; i < AUTH_FAILURES; i++) expect((await partners(operatorGuesser, 'wrong')).statusCode).toBe(401);
    expect((await partners(operatorGuesser, NAMED_TOKEN)).statusCode).toBe(429);
    expect((await summary(operatorGuesser, apiKey)).statusCode).toBe(200);

    const keyGuesser = newAddress();
    for (let i = 0; i < AUTH_FAILURES; i++) expect((await summary(keyGuesser, generateApiKey('sandbox'))).statusCode).toBe(401);
    expect((await summary(keyGuesser, apiKey)).statusCode).toBe(429);
    expect((await partners(keyGuesser, NAMED_TOKEN)).statusCode).toBe(200);
  });
});
