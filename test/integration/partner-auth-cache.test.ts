import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testConfig } from '../../src/config.js';
import { createDatabase, migrateToLatest, type Db } from '../../src/db/database.js';
import { createPartnerRepository, type PartnerRepository } from '../../src/db/repositories/partner.repository.js';
import { createPartnerService } from '../../src/services/partner.service.js';

const { databaseUrl } = testConfig();
const schema = databaseUrl ? `t_${randomBytes(6).toString('hex')}` : undefined;
const TTL_MS = 2000;

describe('API key verification cache', () => {
  let db: Db;
  let repo: PartnerRepository;
  beforeAll(async () => {
    db = await createDatabase({ databaseUrl: databaseUrl ?? null, dataDir: 'memory://', schema });
    await migrateToLatest(db, schema);
    repo = createPartnerRepository(db);
  });

  afterAll(async () => {
    await db?.destroy();
    if (!databaseUrl || !schema) return;
    const admin = new pg.Client({ connectionString: databaseUrl });
    await admin.connect();
    await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await admin.end();
  });

  /** The real repository, counting its key reads; the clock only moves when told. */
  function setUp(gate?: Promise<void>) {
    let reads = 0;
    let at = Date.parse('2026-01-01T00:00:00Z');
    const partners: PartnerRepository = {
      ...repo,
      findByKeyHash: async (hash) => {
        reads++;
        const row = await repo.findByKeyHash(hash);
        await gate;
        return row;
      },
    };
    const service = createPartnerService({ partners, appEnv: 'local', keyRotationGraceMs: 0, authCacheTtlMs: TTL_MS, now: () => new Date(at) });
    return { service, reads: () => reads, advance: (ms: number) => void (at += ms) };
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
    const { service } = setUp(new Promise<void>((resolve) => (release = resolve)));
    const { apiKey, id } = await service.create({ name: 'Changing' });
    // This read sees the partner active, and only returns after the deactivation below.
    const inFlight = service.authenticate(apiKey);
    await new Promise((r) => setTimeout(r, 50));
    await service.update(id, { active: false });
    release();
    await inFlight;
    await expect(service.authenticate(apiKey)).rejects.toMatchObject({ statusCode: 403 });
  });

  it('forgets a key that no longer verifies', async () => {
    const { service, advance } = setUp();
    const { apiKey, id } = await service.create({ name: 'Rotated' });
    await service.authenticate(apiKey);
    await db.deleteFrom('api_keys').where('partner_id', '=', id).execute();
    advance(TTL_MS);
    await expect(service.authenticate(apiKey)).rejects.toMatchObject({ statusCode: 401 });
  });
});
