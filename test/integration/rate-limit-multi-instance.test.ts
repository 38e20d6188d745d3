import { randomBytes, randomInt } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import pg from 'pg';
import { testConfig } from '../helpers/test-config.js';
import type { Config } from '../../src/config/config.js';
import { generateApiKey } from '../../src/domain/api-key.js';
import { createDeps, type Deps } from '../../src/composition/deps.factory.js';
import { buildApp } from '../../src/app.js';
import { SOURCES, type Source } from '../../src/domain/vocabulary.js';

const base = testConfig();
const enabled = Boolean(base.databaseUrl && base.redisUrl);

interface Instance {
  deps: Deps;
  app: FastifyInstance;
  url: string;
}

const config = { ...base, rateLimit: { perSecond: 5, perMinute: 60, perHour: 1000 } };
const schema = `t_${randomBytes(6).toString('hex')}`;
// The ministry systems are never called by the route used here.
const ministryUrls = Object.fromEntries(SOURCES.map((s) => [s, 'http://127.0.0.1:9'])) as Record<Source, string>;
const instances: Instance[] = [];

/** A whole API process in miniature: its own deps (pool, Redis client, limiter) and its own port. */
async function startInstance(overrides: Partial<Config> = {}): Promise<Instance> {
  // No clock is injected, so both limiters read the Redis server clock, as in production.
  const deps = await createDeps({ ...config, ...overrides }, { ministryUrls, dbSchema: schema });
  const app = await buildApp({ logger: deps.logger, bodyLimitBytes: config.bodyLimitBytes, services: deps.services, isDbReady: deps.isDbReady });
  const address = await app.listen({ port: 0, host: '127.0.0.1' });
  return { deps, app, url: address };
}

async function get(instance: Instance, apiKey: string): Promise<number> {
  const res = await fetch(`${instance.url}/api/v1/reports/summary`, { headers: { 'x-api-key': apiKey } });
  await res.arrayBuffer();
  return res.status;
}

async function newKey(): Promise<string> {
  const first = instances[0] as Instance;
  return (await first.deps.services.partners.create({ name: `Bank ${randomBytes(3).toString('hex')}` })).apiKey;
}

describe.skipIf(!enabled)('rate limits across two instances (shared PostgreSQL and Redis)', { tags: ['postgres', 'redis'] }, () => {
  beforeAll(async () => {
    instances.push(await startInstance());
    instances.push(await startInstance());
  });

  afterAll(async () => {
    for (const i of instances) {
      await i.app.close();
      await i.deps.close();
    }
    const client = new pg.Client({ connectionString: base.databaseUrl ?? undefined });
    await client.connect();
    await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await client.end();
  });

  it('holds 5 per second in total when requests alternate between the instances', async () => {
    const [a, b] = instances as [Instance, Instance];
    const apiKey = await newKey();
    const codes: number[] = [];
    for (let i = 0; i < 10; i++) codes.push(await get(i % 2 === 0 ? a : b, apiKey));
    // Instance b refuses after serving only two requests itself: it sees a's three.
    expect(codes).toEqual([200, 200, 200, 200, 200, 429, 429, 429, 429, 429]);
  });

  it('admits exactly 5 of 20 concurrent requests spread over both instances', async () => {
    const apiKey = await newKey();
    const codes = await Promise.all(Array.from({ length: 20 }, (_, i) => get(instances[i % 2] as Instance, apiKey)));
    expect(codes.filter((c) => c === 200)).toHaveLength(5);
    expect(codes.filter((c) => c === 429)).toHaveLength(15);
  });

  it('keeps another key unaffected on both instances', async () => {
    const [a, b] = instances as [Instance, Instance];
    const busy = await newKey();
    const quiet = await newKey();
    await Promise.all(Array.from({ length: 8 }, (_, i) => get(i % 2 === 0 ? a : b, busy)));
    expect([await get(a, quiet), await get(b, quiet)]).toEqual([200, 200]);
  });
});

describe.skipIf(!enabled)('per-address limits across two instances (shared Redis)', { tags: ['postgres', 'redis'] }, () => {
  const pair: Instance[] = [];
  beforeAll(async () => {
    for (let i = 0; i < 2; i++) pair.push(await startInstance({ authFailuresPerMinute: 3, shortLinkRateLimitPerMinute: 4 }));
  });
  afterAll(async () => {
    for (const i of pair) {
      await i.app.close();
      await i.deps.close();
    }
  });

  // Injected with an address of the test's own: other suites' traffic from 127.0.0.1 shares this Redis.
  const address = () => `10.${randomInt(256)}.${randomInt(256)}.${randomInt(1, 255)}`;
  const inject = (i: number, url: string, remoteAddress: string, headers: Record<string, string> = {}) =>
    (pair[i % 2] as Instance).app.inject({ method: 'GET', url, remoteAddress, headers }).then((res) => res.statusCode);

  it('counts failed authentications of one address on both instances together', async () => {
    const from = address();
    const codes: number[] = [];
    for (let i = 0; i < 6; i++) codes.push(await inject(i, '/api/v1/reports/summary', from, { 'x-api-key': generateApiKey('sandbox') }));
    expect(codes).toEqual([401, 401, 401, 429, 429, 429]);
  });

  it('counts QR landing-page requests of one address on both instances together', async () => {
    const from = address();
    const codes: number[] = [];
    for (let i = 0; i < 6; i++) codes.push(await inject(i, '/q/00000000-0000-4000-8000-000000000000/status', from));
    expect(codes).toEqual([404, 404, 404, 404, 429, 429]);
  });
});
