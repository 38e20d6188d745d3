import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { createTestContext, dropSchema, type TestContext } from '../helpers/test-context.js';
import { testConfig } from '../helpers/test-config.js';
import type { Config } from '../../src/config/config.js';
import { createDeps, type Deps } from '../../src/composition/deps.factory.js';
import { buildApp } from '../../src/app.js';
import { buildAdminApp } from '../../src/admin-app.js';
import { operatorsOf } from '../../src/http/plugins/admin-auth.plugin.js';
import { SOURCES, type Source } from '../../src/domain/vocabulary.js';

/*
 * A partner's own rate limits: set and reset through the admin API, audited, and applied per API
 * key by the limiter (its headers naming the partner's own limits), on one instance in memory and
 * on two sharing PostgreSQL and Redis.
 */

interface Limits {
  perSecond: number;
  perMinute: number;
  perHour: number;
}

interface PartnerView {
  id: string;
  rateLimits: Limits | null;
}

const DEFAULTS: Limits = { perSecond: 5, perMinute: 60, perHour: 1000 };
const OWN: Limits = { perSecond: 7, perMinute: 100, perHour: 2000 };
const policyOf = (l: Limits) => `"per-second";q=${l.perSecond};w=1, "per-minute";q=${l.perMinute};w=60, "per-hour";q=${l.perHour};w=3600`;

const bearer = (config: Config) => ({ authorization: `Bearer ${config.adminToken}` });

function patchPartner(admin: FastifyInstance, config: Config, id: string, payload: unknown) {
  return admin.inject({ method: 'PATCH', url: `/admin/partners/${id}`, headers: bearer(config), payload: payload as object });
}

async function listed(admin: FastifyInstance, config: Config, id: string): Promise<PartnerView | undefined> {
  const res = await admin.inject({ method: 'GET', url: '/admin/partners', headers: bearer(config) });
  expect(res.statusCode).toBe(200);
  return res.json<PartnerView[]>().find((p) => p.id === id);
}

const statuses = (responses: LightMyRequestResponse[]) => responses.map((r) => r.statusCode);
const passed = (codes: number[]) => codes.filter((c) => c === 200).length;

describe('per-partner rate limits through the admin API', () => {
  let ctx: TestContext;
  beforeAll(async () => {
    ctx = await createTestContext({ config: { adminTokens: [{ name: 'dorj', token: 'dorj-operator-token' }] } });
  });
  afterAll(() => ctx.close());

  const patch = (id: string, payload: unknown) => patchPartner(ctx.admin, ctx.config, id, payload);

  it('shows null for a partner on the defaults, sets its own limits (with other fields), and null resets them', async () => {
    const { id } = await ctx.partner();
    expect(await listed(ctx.admin, ctx.config, id)).toMatchObject({ id, rateLimits: null });

    const set = await patch(id, { rateLimits: OWN, qrStandard: 'govstd' });
    expect(set.statusCode).toBe(200);
    expect(set.json()).toMatchObject({ id, qrStandard: 'govstd', rateLimits: OWN });
    expect(await listed(ctx.admin, ctx.config, id)).toMatchObject({ rateLimits: OWN, qrStandard: 'govstd' });

    // A patch without rateLimits leaves them as they are.
    expect((await patch(id, { active: false })).json()).toMatchObject({ active: false, rateLimits: OWN });

    const reset = await patch(id, { rateLimits: null });
    expect(reset.statusCode).toBe(200);
    expect(reset.json()).toMatchObject({ rateLimits: null, active: false });
    expect(await listed(ctx.admin, ctx.config, id)).toMatchObject({ rateLimits: null });
  });

  it.each([
    ['zero', { ...OWN, perSecond: 0 }, 'rateLimits.perSecond must be >= 1', '/rateLimits/perSecond'],
    ['negative', { ...OWN, perMinute: -5 }, 'rateLimits.perMinute must be >= 1', '/rateLimits/perMinute'],
    ['fractional', { ...OWN, perHour: 1.5 }, 'rateLimits.perHour must be of type integer', '/rateLimits/perHour'],
    ['a string', { ...OWN, perSecond: '7' }, 'rateLimits.perSecond must be of type integer', '/rateLimits/perSecond'],
    ['missing a member', { perSecond: 7, perMinute: 100 }, 'property rateLimits.perHour is required', '/rateLimits/perHour'],
    ['an extra member', { ...OWN, perDay: 9000 }, 'property rateLimits.perDay should not exist', '/rateLimits/perDay'],
    ['not an object', 'fast', 'rateLimits must be of type object,null', '/rateLimits'],
  ])('refuses limits %s with 400 in the validation error shape, and keeps the stored ones', async (_, rateLimits, message, path) => {
    const { id } = await ctx.partner();
    expect((await patch(id, { rateLimits: OWN })).statusCode).toBe(200);
    const res = await patch(id, { rateLimits, active: false });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({ statusCode: 400, error: 'Bad Request', message: [message], code: 'invalid_request', requestId: res.headers['x-request-id'], errors: [{ path, message }] });
    expect(await listed(ctx.admin, ctx.config, id)).toMatchObject({ rateLimits: OWN, active: true });
  });

  it('records each change in the audit log with the limits before and after', async () => {
    const { id } = await ctx.partner();
    const operator = { authorization: 'Bearer dorj-operator-token' };
    for (const rateLimits of [OWN, null]) {
      const res = await ctx.admin.inject({ method: 'PATCH', url: `/admin/partners/${id}`, headers: operator, payload: { rateLimits } });
      expect(res.statusCode).toBe(200);
    }
    const audit = await ctx.admin.inject({ method: 'GET', url: `/admin/audit?targetId=${id}&action=partner.update`, headers: operator });
    expect(audit.statusCode).toBe(200);
    // Newest first: the reset, then the setting.
    expect(audit.json<{ items: unknown[] }>().items).toEqual([
      expect.objectContaining({ operator: 'dorj', action: 'partner.update', before: expect.objectContaining({ rateLimits: OWN }), after: expect.objectContaining({ rateLimits: null }) }),
      expect.objectContaining({ operator: 'dorj', action: 'partner.update', before: expect.objectContaining({ rateLimits: null }), after: expect.objectContaining({ rateLimits: OWN }) }),
    ]);
  });
});

describe('per-partner rate limits on one instance (in memory)', () => {
  let ctx: TestContext;
  // The limiter's clock moves only when a test says so: a slow machine must not slide the windows.
  let limiterNow = 1_760_000_000_000;
  beforeAll(async () => {
    ctx = await createTestContext({ config: { rateLimit: DEFAULTS, redisUrl: null }, rateLimitClock: () => limiterNow });
  });
  afterAll(() => ctx.close());

  const summary = (apiKey: string) => ctx.api(apiKey, { method: 'GET', url: '/api/v1/reports/summary' });
  const burst = (apiKey: string, n: number) => Promise.all(Array.from({ length: n }, () => summary(apiKey)));

  it("admits exactly the partner's own per-second limit, reports it in the headers, and leaves another partner on the defaults", async () => {
    const own = await ctx.partner();
    const other = await ctx.partner();
    expect((await patchPartner(ctx.admin, ctx.config, own.id, { rateLimits: OWN })).statusCode).toBe(200);

    const [ownResponses, otherResponses] = await Promise.all([burst(own.apiKey, 15), burst(other.apiKey, 15)]);
    expect(passed(statuses(ownResponses))).toBe(7);
    expect(passed(statuses(otherResponses))).toBe(5);
    for (const r of ownResponses) expect(r.headers['ratelimit-policy']).toBe(policyOf(OWN));
    for (const r of otherResponses) expect(r.headers['ratelimit-policy']).toBe(policyOf(DEFAULTS));
    const refused = ownResponses.find((r) => r.statusCode === 429);
    expect(refused?.headers['ratelimit']).toBe('"per-second";r=0;t=1, "per-minute";r=93;t=60, "per-hour";r=1993;t=3600');
  });

  it('keeps counting what each window already holds when the limits change, both up and down', async () => {
    const { id, apiKey } = await ctx.partner();
    limiterNow += 10_000;
    expect(passed(statuses(await burst(apiKey, 6)))).toBe(5);

    // Raised to 7 in the same second: the 5 already counted leave room for 2 more.
    expect((await patchPartner(ctx.admin, ctx.config, id, { rateLimits: OWN })).statusCode).toBe(200);
    expect(passed(statuses(await burst(apiKey, 5)))).toBe(2);

    // The next second, lowered below what the minute already holds: refused until the minute slides.
    limiterNow += 1000;
    expect((await patchPartner(ctx.admin, ctx.config, id, { rateLimits: { perSecond: 5, perMinute: 7, perHour: 1000 } })).statusCode).toBe(200);
    const refused = await summary(apiKey);
    expect(refused.statusCode).toBe(429);
    expect(refused.headers['ratelimit']).toBe('"per-second";r=5;t=0, "per-minute";r=0;t=59, "per-hour";r=993;t=3599');

    // Back to the defaults: the minute's 7 of 60 leave room again.
    expect((await patchPartner(ctx.admin, ctx.config, id, { rateLimits: null })).statusCode).toBe(200);
    const again = await summary(apiKey);
    expect(again.statusCode).toBe(200);
    expect(again.headers['ratelimit-policy']).toBe(policyOf(DEFAULTS));
    expect(again.headers['ratelimit']).toBe('"per-second";r=4;t=1, "per-minute";r=52;t=59, "per-hour";r=992;t=3599');
  });
});

const base = testConfig();
const shared = Boolean(base.databaseUrl && base.redisUrl);

interface Instance {
  deps: Deps;
  app: FastifyInstance;
  admin: FastifyInstance;
  url: string;
}

describe.skipIf(!shared)('per-partner rate limits across two instances (shared PostgreSQL and Redis)', { tags: ['postgres', 'redis'] }, () => {
  // A Redis check slower than the timeout fails open and is not counted: on a busy machine the
  // 200 ms default lets requests through uncounted, so the bound here is only against a hang.
  const config: Config = { ...base, rateLimit: DEFAULTS, rateLimitRedisTimeoutMs: 10_000 };
  const schema = `t_${randomBytes(6).toString('hex')}`;
  // The ministry systems are never called by the route used here.
  const ministryUrls = Object.fromEntries(SOURCES.map((s) => [s, 'http://127.0.0.1:9'])) as Record<Source, string>;
  const instances: Instance[] = [];

  // Both limiters read one clock that stands still, so a burst stays within one second however
  // long a busy machine takes to send it; their counts are kept apart from other suites' in Redis.
  const frozenMs = Date.now();
  const rateLimitNamespace = `prl-${randomBytes(4).toString('hex')}:`;

  /** A whole API process in miniature, with its admin listener: its own pool, Redis client, limiter and auth cache. */
  async function startInstance(): Promise<Instance> {
    const deps = await createDeps(config, { ministryUrls, dbSchema: schema, rateLimitClock: () => frozenMs, rateLimitNamespace });
    const app = await buildApp({ logger: deps.logger, bodyLimitBytes: config.bodyLimitBytes, services: deps.services, isDbReady: deps.isDbReady });
    const admin = await buildAdminApp({ logger: deps.logger, operators: operatorsOf(config), allowedHosts: config.adminAllowedHosts, services: deps.admin });
    const url = await app.listen({ port: 0, host: '127.0.0.1' });
    return { deps, app, admin, url };
  }

  async function get(instance: Instance, apiKey: string): Promise<{ status: number; policy: string | null }> {
    const res = await fetch(`${instance.url}/api/v1/reports/summary`, { headers: { 'x-api-key': apiKey } });
    await res.arrayBuffer();
    return { status: res.status, policy: res.headers.get('ratelimit-policy') };
  }

  async function newPartner(rateLimits?: Limits): Promise<{ id: string; apiKey: string }> {
    const first = instances[0] as Instance;
    const created = await first.deps.services.partners.create({ name: `Bank ${randomBytes(3).toString('hex')}` });
    if (rateLimits) expect((await patchPartner(first.admin, config, created.id, { rateLimits })).statusCode).toBe(200);
    return { id: created.id, apiKey: created.apiKey };
  }

  const spread = (apiKey: string, n: number) => Promise.all(Array.from({ length: n }, (_, i) => get(instances[i % 2] as Instance, apiKey)));

  beforeAll(async () => {
    instances.push(await startInstance());
    instances.push(await startInstance());
  });

  afterAll(async () => {
    for (const i of instances) {
      await i.app.close();
      await i.admin.close();
      await i.deps.close();
    }
    if (base.databaseUrl) await dropSchema(base.databaseUrl, schema);
  });

  it("admits exactly 7 of 20 concurrent requests of a partner limited to 7 per second, and 5 of another's on the defaults", async () => {
    const own = await newPartner(OWN);
    const other = await newPartner();
    const [ownAnswers, otherAnswers] = await Promise.all([spread(own.apiKey, 20), spread(other.apiKey, 20)]);
    expect(passed(ownAnswers.map((a) => a.status))).toBe(7);
    expect(passed(otherAnswers.map((a) => a.status))).toBe(5);
    expect(new Set(ownAnswers.map((a) => a.policy))).toEqual(new Set([policyOf(OWN)]));
    expect(new Set(otherAnswers.map((a) => a.policy))).toEqual(new Set([policyOf(DEFAULTS)]));
  });

  it('applies limits set through one instance on the other within 5 s', async () => {
    const [a, b] = instances as [Instance, Instance];
    const partner = await newPartner();
    // The other instance has the partner's key cached with the defaults.
    expect((await get(b, partner.apiKey)).policy).toBe(policyOf(DEFAULTS));
    expect((await patchPartner(a.admin, config, partner.id, { rateLimits: OWN })).statusCode).toBe(200);
    expect((await get(a, partner.apiKey)).policy).toBe(policyOf(OWN));
    await expect.poll(async () => (await get(b, partner.apiKey)).policy, { timeout: 5000, interval: 100 }).toBe(policyOf(OWN));
  });
});
