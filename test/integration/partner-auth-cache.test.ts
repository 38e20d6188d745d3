import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { testConfig } from '../helpers/test-config.js';
import { createDatabase, migrateToLatest, type Db } from '../../src/db/database.js';
import { createPartnerRepository, type PartnerRepository } from '../../src/db/repositories/partner.repository.js';
import { createPartnerService } from '../../src/services/partner.service.js';
import { buildApp } from '../../src/app.js';
import { generateApiKey } from '../../src/domain/api-key.js';
import { createTestContext } from '../helpers/test-context.js';
import { databaseImage } from '../helpers/database-image.js';
import { REG } from '../helpers/fixtures.js';
import { systemClock } from '../../src/domain/clock.port.js';

/** Keys the service will hand out next, so a test can look a key up before it exists. */
const nextKeys: string[] = [];
const generateKey = (env: 'sandbox' | 'production') => nextKeys.shift() ?? generateApiKey(env);

const { databaseUrl } = testConfig();
const schema = databaseUrl ? `t_${randomBytes(6).toString('hex')}` : undefined;
const TTL_MS = 2000;

describe('API key verification cache', () => {
  let db: Db;
  let repo: PartnerRepository;
  beforeAll(async () => {
    db = await createDatabase({ databaseUrl: databaseUrl ?? null, dataDir: 'memory://', schema, image: databaseUrl ? undefined : await databaseImage() });
    await migrateToLatest(db, schema);
    repo = createPartnerRepository(db, systemClock);
  });

  afterAll(async () => {
    await db?.destroy();
    if (!databaseUrl || !schema) return;
    const admin = new pg.Client({ connectionString: databaseUrl });
    await admin.connect();
    await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await admin.end();
  });

  // A test that fails half-way must not hand its queued key, or its spy, to the next one.
  afterEach(() => {
    nextKeys.length = 0;
    vi.restoreAllMocks();
  });

  /**
   * The real repository, counting its key reads; the clock only moves when told. With a gate, each
   * read holds its row until the gate opens, and `held()` counts the reads waiting there (their
   * database answer already in hand).
   */
  function setUp(gate?: Promise<void>) {
    let reads = 0;
    let held = 0;
    let at = Date.parse('2026-01-01T00:00:00Z');
    const partners: PartnerRepository = {
      ...repo,
      findByKeyHash: async (hash) => {
        reads++;
        const row = await repo.findByKeyHash(hash);
        held++;
        await gate;
        return row;
      },
    };
    const service = createPartnerService({ partners, appEnv: 'local', keyRotationGraceMs: 0, authCacheTtlMs: TTL_MS, now: () => new Date(at), generateKey });
    return { service, reads: () => reads, held: () => held, advance: (ms: number) => void (at += ms) };
  }

  const burst = <T>(n: number, fn: () => Promise<T>) => Promise.all(Array.from({ length: n }, fn));

  it('reads a key once for a burst of concurrent requests, and again only once after it expired', async () => {
    const { service, reads, advance } = setUp();
    const { apiKey, id } = await service.create({ name: 'Burst' });
    const first = await burst(50, () => service.authenticate(apiKey));
    expect(first.every((p) => p.id === id)).toBe(true);
    expect(reads()).toBe(1);

    advance(TTL_MS);
    const again = await burst(50, () => service.authenticate(apiKey));
    expect(again.every((p) => p.id === id)).toBe(true);
    expect(reads()).toBe(2);
  });

  it('past half the TTL answers from the cache and reloads once in the background', async () => {
    const { service, reads, advance } = setUp();
    const { apiKey } = await service.create({ name: 'Ahead' });
    await service.authenticate(apiKey);
    advance(TTL_MS / 2 + 1);
    await burst(20, () => service.authenticate(apiKey));
    await expect.poll(reads).toBe(2);
    // The reload restarted the entry's age: the next TTL is counted from it.
    advance(TTL_MS / 2 - 2);
    await service.authenticate(apiKey);
    expect(reads()).toBe(2);
  });

  it('a change made through the service applies at once, even over a read that was in flight', async () => {
    let release = () => {};
    const { service, held } = setUp(new Promise<void>((resolve) => (release = resolve)));
    const { apiKey, id } = await service.create({ name: 'Changing' });
    // This read sees the partner active, and only returns after the deactivation below.
    const inFlight = service.authenticate(apiKey);
    await expect.poll(held).toBe(1);
    await service.update(id, { active: false });
    release();
    await inFlight;
    await expect(service.authenticate(apiKey)).rejects.toMatchObject({ code: 'partner_inactive' });
  });

  it('remembers an unknown key for the TTL: a flood of it reads the database once per TTL', async () => {
    const { service, advance } = setUp();
    const reads = vi.spyOn(repo, 'findByKeyHash');
    const unknownKey = generateApiKey('sandbox');
    for (let i = 0; i < 20; i++) await expect(service.authenticate(unknownKey)).rejects.toMatchObject({ code: 'unauthenticated' });
    const concurrent = await Promise.allSettled(Array.from({ length: 20 }, () => service.authenticate(unknownKey)));
    expect(concurrent.every((r) => r.status === 'rejected')).toBe(true);
    expect(reads).toHaveBeenCalledTimes(1);

    advance(TTL_MS - 1);
    await expect(service.authenticate(unknownKey)).rejects.toMatchObject({ code: 'unauthenticated' });
    expect(reads).toHaveBeenCalledTimes(1);
    advance(1);
    for (let i = 0; i < 5; i++) await expect(service.authenticate(unknownKey)).rejects.toMatchObject({ code: 'unauthenticated' });
    expect(reads).toHaveBeenCalledTimes(2);
    // Another unknown key is its own entry.
    await expect(service.authenticate(generateApiKey('sandbox'))).rejects.toMatchObject({ code: 'unauthenticated' });
    expect(reads).toHaveBeenCalledTimes(3);
  });

  it('a key created or rotated through this instance works at once, even if it was refused just before', async () => {
    const { service } = setUp();
    const created = generateApiKey('sandbox');
    await expect(service.authenticate(created)).rejects.toMatchObject({ code: 'unauthenticated' });
    nextKeys.push(created);
    const partner = await service.create({ name: 'Refused first' });
    expect(partner.apiKey).toBe(created);
    await expect(service.authenticate(created)).resolves.toMatchObject({ id: partner.id });

    const rotated = generateApiKey('sandbox');
    await expect(service.authenticate(rotated)).rejects.toMatchObject({ code: 'unauthenticated' });
    nextKeys.push(rotated);
    expect((await service.rotateKey(partner.id)).apiKey).toBe(rotated);
    await expect(service.authenticate(rotated)).resolves.toMatchObject({ id: partner.id });
  });

  it('a refusal read in flight while the key is created does not outlive the creation', async () => {
    let release = () => {};
    const { service, held } = setUp(new Promise<void>((resolve) => (release = resolve)));
    const key = generateApiKey('sandbox');
    // This read finds no such key, and only returns after the creation below.
    const inFlight = service.authenticate(key);
    await expect.poll(held).toBe(1);
    nextKeys.push(key);
    const { id } = await service.create({ name: 'Raced' });
    const after = service.authenticate(key);
    release();
    await expect(inFlight).rejects.toMatchObject({ code: 'unauthenticated' });
    await expect(after).resolves.toMatchObject({ id });
    await expect(service.authenticate(key)).resolves.toMatchObject({ id });
  });

  it('a key created through another instance is refused here for at most the TTL', async () => {
    const here = setUp();
    const there = createPartnerService({ partners: repo, appEnv: 'local', keyRotationGraceMs: 0, authCacheTtlMs: TTL_MS, generateKey, now: systemClock });
    const key = generateApiKey('sandbox');
    await expect(here.service.authenticate(key)).rejects.toMatchObject({ code: 'unauthenticated' });
    nextKeys.push(key);
    const { id } = await there.create({ name: 'Elsewhere' });
    await expect(here.service.authenticate(key)).rejects.toMatchObject({ code: 'unauthenticated' });
    here.advance(TTL_MS);
    await expect(here.service.authenticate(key)).resolves.toMatchObject({ id });
  });

  it('forgets a key that no longer verifies', async () => {
    const { service, advance } = setUp();
    const { apiKey, id } = await service.create({ name: 'Rotated' });
    await service.authenticate(apiKey);
    await db.deleteFrom('api_keys').where('partner_id', '=', id).execute();
    advance(TTL_MS);
    await expect(service.authenticate(apiKey)).rejects.toMatchObject({ code: 'unauthenticated' });
  });
});

describe('unknown API keys over HTTP', () => {
  it('a flood of one unknown key is answered 401 with one database read', async () => {
    const ctx = await createTestContext();
    try {
      const repo = createPartnerRepository(ctx.deps.db, ctx.now);
      const reads = vi.spyOn(repo, 'findByKeyHash');
      // A TTL no test run outlasts, so the count does not depend on timing.
      const partners = createPartnerService({ partners: repo, appEnv: ctx.config.appEnv, keyRotationGraceMs: 0, authCacheTtlMs: 3_600_000, now: ctx.now });
      const app = await buildApp({ logger: ctx.deps.logger, bodyLimitBytes: ctx.config.bodyLimitBytes, services: { ...ctx.deps.services, partners }, isDbReady: ctx.deps.isDbReady });
      try {
        const unknownKey = generateApiKey('sandbox');
        for (let i = 0; i < 30; i++) {
          const res = await app.inject({ method: 'GET', url: `/api/v1/invoices?ttd=${REG}`, headers: { 'x-api-key': unknownKey } });
          expect(res.statusCode).toBe(401);
          expect(res.json()).toEqual({ statusCode: 401, message: 'Invalid or missing API key', error: 'Unauthorized', code: 'unauthenticated', requestId: res.headers['x-request-id'] });
        }
        expect(reads).toHaveBeenCalledTimes(1);
      } finally {
        await app.close();
      }
    } finally {
      await ctx.close();
    }
  });
});
