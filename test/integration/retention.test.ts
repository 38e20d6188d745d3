import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createTestContext, type TestContext } from '../helpers/test-context.js';
import { startReceiver, type WebhookReceiver } from '../helpers/webhook-receiver.js';
import { createIdempotencyRepository } from '../../src/db/repositories/idempotency.repository.js';
import { createRetentionRepository } from '../../src/db/repositories/retention.repository.js';
import { loadConfig, type Config } from '../../src/config/config.js';
import { testConfig } from '../helpers/test-config.js';
import type { StoredDeliveryStatus } from '../../src/db/db.types.js';
import type { Job } from '../../src/work/job-runner.js';
import { sql } from 'kysely';
import { createPartitionRepository, PARTITIONED_TABLES, type LegacyTables } from '../../src/db/repositories/partition.repository.js';
import { legacyLayoutContext } from '../helpers/legacy-layout.js';

const DAY = 24 * 3600 * 1000;

function sweepJob(ctx: TestContext): Job {
  const job = ctx.deps.jobs.find((j) => j.name === 'retention-sweep');
  if (!job) throw new Error('the retention sweep is not among the background jobs');
  return job;
}

/**
 * Rows written straight to the tables, with created_at chosen relative to the services' clock; a
 * month no partition covers yet gets its partitions first (a legacy partition covers every past month).
 */
function seeder(ctx: TestContext) {
  const db = ctx.deps.db;
  const partitions = createPartitionRepository(db);
  const ago = (ms: number) => new Date(ctx.now().getTime() - ms);
  const month = async (at: Date) => {
    for (const table of PARTITIONED_TABLES) await partitions.createMonths(table, at, 1);
  };
  return {
    async webhook(partnerId: string): Promise<string> {
      const row = await db
        .insertInto('webhooks')
        .values({ partner_id: partnerId, url: 'https://hooks.example.com/x', events: JSON.stringify(['payment.confirmed']), secret_ciphertext: 'x' })
        .returning('id')
        .executeTakeFirstOrThrow();
      return row.id;
    },
    async event(partnerId: string, ageMs: number): Promise<string> {
      await month(ago(ageMs));
      const row = await db
        .insertInto('events')
        .values({ partner_id: partnerId, event: 'payment.confirmed', payload: '{}', created_at: ago(ageMs) })
        .returning('id')
        .executeTakeFirstOrThrow();
      return row.id;
    },
    async delivery(webhookId: string, eventId: string, status: StoredDeliveryStatus, attemptAgesMs: number[] = []): Promise<{ id: string; attempts: string[] }> {
      const d = await db
        .insertInto('webhook_deliveries')
        // A delivery carries its event's created_at, as the service writes it.
        .values({ webhook_id: webhookId, event_id: eventId, status, next_attempt_at: ctx.now(), created_at: sql<Date>`(SELECT created_at FROM events WHERE id = ${eventId}::uuid)` })
        .returning('id')
        .executeTakeFirstOrThrow();
      const attempts: string[] = [];
      for (const [i, age] of attemptAgesMs.entries()) {
        await month(ago(age));
        const a = await db
          .insertInto('webhook_attempts')
          .values({ delivery_id: d.id, webhook_id: webhookId, attempt: i + 1, succeeded: status === 'delivered', duration_ms: 5, created_at: ago(age) })
          .returning('id')
          .executeTakeFirstOrThrow();
        attempts.push(a.id);
      }
      return { id: d.id, attempts };
    },
  };
}

async function existing(ctx: TestContext, table: 'events' | 'webhook_deliveries' | 'webhook_attempts', ids: string[]): Promise<Set<string>> {
  if (ids.length === 0) return new Set();
  const rows = await ctx.deps.db.selectFrom(table).select('id').where('id', 'in', ids).execute();
  return new Set(rows.map((r) => r.id));
}

const legacyOf = (ctx: TestContext): Promise<LegacyTables> => createPartitionRepository(ctx.deps.db).legacyTables();

async function keysOf(ctx: TestContext, partnerId: string): Promise<string[]> {
  const rows = await ctx.deps.db.selectFrom('idempotency_keys').select('key').where('partner_id', '=', partnerId).orderBy('key').execute();
  return rows.map((r) => r.key);
}

/* Row by row: what the legacy partitions (the tables as they were before partitioning) still hold. */
describe('retention sweep with default settings, on the legacy partitions', () => {
  let ctx: TestContext;
  beforeAll(async () => {
    ctx = await legacyLayoutContext();
  });
  afterAll(() => ctx.close());

  it('deletes expired idempotency keys and keeps live ones', async () => {
    const repo = createIdempotencyRepository(ctx.deps.db);
    const { id: partnerId } = await ctx.partner();
    const ttl = ctx.config.idempotencyTtlMs;
    const claim = (key: string) => {
      const now = ctx.now();
      return repo.claim({ partnerId, key, requestHash: 'h', now, lockUntil: now, expiresAt: new Date(now.getTime() + ttl) });
    };
    await claim('a-old');
    ctx.advance(ttl / 2);
    await claim('b-young');
    ctx.advance(ttl / 2 - 1000);
    await sweepJob(ctx).run();
    expect(await keysOf(ctx, partnerId)).toEqual(['a-old', 'b-young']);

    ctx.advance(1000);
    await sweepJob(ctx).run();
    expect(await keysOf(ctx, partnerId)).toEqual(['b-young']);
  });

  it('deletes old finished attempts, deliveries and events, and keeps pending deliveries and recent rows', async () => {
    const seed = seeder(ctx);
    const { id: partnerId } = await ctx.partner();
    const webhook = await seed.webhook(partnerId);
    const other = await seed.webhook(partnerId);

    // Old and finished: everything goes.
    const e1 = await seed.event(partnerId, 100 * DAY);
    const d1 = await seed.delivery(webhook, e1, 'delivered', [100 * DAY, 99 * DAY]);
    // Old but still pending: the event, the delivery and its attempt all stay.
    const e2 = await seed.event(partnerId, 100 * DAY);
    const d2 = await seed.delivery(webhook, e2, 'pending', [99 * DAY]);
    // Old, one delivery finished and one pending: the event and both deliveries stay; the finished one's old attempt goes.
    const e3 = await seed.event(partnerId, 100 * DAY);
    const d3done = await seed.delivery(webhook, e3, 'delivered', [99 * DAY]);
    const d3pending = await seed.delivery(other, e3, 'pending');
    // Between the two retentions: the attempt goes, the delivery and the event stay.
    const e4 = await seed.event(partnerId, 40 * DAY);
    const d4 = await seed.delivery(webhook, e4, 'failed', [40 * DAY, 39 * DAY]);
    // Recent: all stays.
    const e5 = await seed.event(partnerId, 10 * DAY);
    const d5 = await seed.delivery(webhook, e5, 'delivered', [10 * DAY]);
    // Old with no deliveries, and old with a canceled delivery never attempted: both go.
    const e6 = await seed.event(partnerId, 100 * DAY);
    const e7 = await seed.event(partnerId, 100 * DAY);
    const d7 = await seed.delivery(webhook, e7, 'canceled');

    await sweepJob(ctx).run();

    expect(await existing(ctx, 'events', [e1, e2, e3, e4, e5, e6, e7])).toEqual(new Set([e2, e3, e4, e5]));
    expect(await existing(ctx, 'webhook_deliveries', [d1.id, d2.id, d3done.id, d3pending.id, d4.id, d5.id, d7.id])).toEqual(
      new Set([d2.id, d3done.id, d3pending.id, d4.id, d5.id]),
    );
    expect(await existing(ctx, 'webhook_attempts', [...d1.attempts, ...d2.attempts, ...d3done.attempts, ...d4.attempts, ...d5.attempts])).toEqual(
      new Set([...d2.attempts, ...d5.attempts]),
    );

    // Once the pending deliveries finish, their old event goes on the next pass; the recent rows still stay.
    await ctx.deps.db.updateTable('webhook_deliveries').set({ status: 'failed' }).where('id', 'in', [d2.id, d3pending.id]).execute();
    await sweepJob(ctx).run();
    expect(await existing(ctx, 'events', [e2, e3, e4, e5])).toEqual(new Set([e4, e5]));
    expect(await existing(ctx, 'webhook_deliveries', [d2.id, d3done.id, d3pending.id, d4.id, d5.id])).toEqual(new Set([d4.id, d5.id]));
    expect(await existing(ctx, 'webhook_attempts', [...d2.attempts, ...d5.attempts])).toEqual(new Set(d5.attempts));
  });

  it('removes a delivered webhook and its event end to end once EVENT_RETENTION_MS has passed, and keeps the payment', async () => {
    let receiver: WebhookReceiver | undefined;
    try {
      receiver = await startReceiver();
      const { id: partnerId, apiKey } = await ctx.partner();
      const reg = await ctx.api(apiKey, { method: 'POST', url: '/api/v1/webhooks', payload: { url: receiver.url, secret: 'whsec_0123456789abcdef', events: ['payment.submitted'] } });
      expect(reg.statusCode).toBe(201);
      const invoice = await ctx.api(apiKey, { method: 'GET', url: '/api/v1/invoices/ref/P-T-NOPAYER' });
      const paid = await ctx.api(apiKey, { method: 'POST', url: '/api/v1/payments', payload: { invoiceId: invoice.json<{ id: string }>().id } });
      expect(paid.statusCode).toBe(201);
      const paymentId = paid.json<{ id: string }>().id;
      await ctx.runJobs();
      expect(receiver.received).toHaveLength(1);
      const events = () => ctx.deps.db.selectFrom('events').select('id').where('partner_id', '=', partnerId).execute();
      expect(await events()).toHaveLength(1);

      ctx.advance(ctx.config.retention.eventMs + DAY);
      await sweepJob(ctx).run();
      expect(await events()).toHaveLength(0);
      const payment = await ctx.deps.db.selectFrom('payments').select('id').where('id', '=', paymentId).executeTakeFirst();
      expect(payment?.id).toBe(paymentId);
    } finally {
      await receiver?.close();
    }
  });
});

describe('retention sweep batches, on the legacy partitions', () => {
  const BATCH = 2;
  let ctx: TestContext;
  // A sweep takes every eligible row in the database and these cases count what it took, so each
  // starts from an empty one: nothing another case left behind can be in its totals.
  beforeEach(async () => {
    const retention: Config['retention'] = { ...testConfig().retention, batchSize: BATCH };
    ctx = await legacyLayoutContext({ config: { retention } });
  });
  afterEach(() => ctx.close());

  async function counts(partnerId: string) {
    const db = ctx.deps.db;
    const count = async (q: Promise<{ id: string }[]>) => (await q).length;
    return {
      keys: (await keysOf(ctx, partnerId)).length,
      events: await count(db.selectFrom('events').select('id').where('partner_id', '=', partnerId).execute()),
      deliveries: await count(db.selectFrom('webhook_deliveries as d').innerJoin('events as e', 'e.id', 'd.event_id').select('d.id').where('e.partner_id', '=', partnerId).execute()),
      attempts: await count(db.selectFrom('webhook_attempts as a').innerJoin('webhooks as w', 'w.id', 'a.webhook_id').select('a.id').where('w.partner_id', '=', partnerId).execute()),
    };
  }

  it('deletes at most the batch size from each table per pass, and everything eligible over several passes', async () => {
    const seed = seeder(ctx);
    const repo = createIdempotencyRepository(ctx.deps.db);
    const { id: partnerId } = await ctx.partner();
    const webhook = await seed.webhook(partnerId);
    for (let i = 0; i < 5; i++) {
      const event = await seed.event(partnerId, 100 * DAY);
      await seed.delivery(webhook, event, 'delivered', [100 * DAY]);
      const now = ctx.now();
      await repo.claim({ partnerId, key: `k-${i}`, requestHash: 'h', now, lockUntil: now, expiresAt: now });
    }
    let before = await counts(partnerId);
    expect(before).toEqual({ keys: 5, events: 5, deliveries: 5, attempts: 5 });
    for (let pass = 0; pass < 10 && Object.values(before).some((n) => n > 0); pass++) {
      await sweepJob(ctx).run();
      const after = await counts(partnerId);
      for (const table of ['keys', 'events', 'deliveries', 'attempts'] as const) {
        expect(before[table] - after[table]).toBeGreaterThanOrEqual(0);
        expect(before[table] - after[table]).toBeLessThanOrEqual(BATCH);
      }
      before = after;
    }
    expect(before).toEqual({ keys: 0, events: 0, deliveries: 0, attempts: 0 });
  });

  it('takes the attempts of an expiring event first when events are kept for less time than attempts', async () => {
    const seed = seeder(ctx);
    const { id: partnerId } = await ctx.partner();
    const webhook = await seed.webhook(partnerId);
    const event = await seed.event(partnerId, 10 * DAY);
    const delivery = await seed.delivery(webhook, event, 'delivered', [10 * DAY, 9 * DAY]);
    const retention = createRetentionRepository(ctx.deps.db);
    const cutoffs = { attemptsBefore: new Date(ctx.now().getTime() - 30 * DAY), eventsBefore: new Date(ctx.now().getTime() - 5 * DAY) };
    expect(await retention.sweep(await legacyOf(ctx), cutoffs, BATCH)).toEqual({ attempts: 2, deliveries: 1, events: 1 });
    expect(await existing(ctx, 'webhook_attempts', delivery.attempts)).toEqual(new Set());
  });

  it('lets several instances sweep at once without errors or double counting', async () => {
    const seed = seeder(ctx);
    const { id: partnerId } = await ctx.partner();
    const webhook = await seed.webhook(partnerId);
    for (let i = 0; i < 6; i++) await seed.delivery(webhook, await seed.event(partnerId, 100 * DAY), 'failed', [100 * DAY]);
    const instances = [createRetentionRepository(ctx.deps.db), createRetentionRepository(ctx.deps.db), createRetentionRepository(ctx.deps.db)];
    const cutoffs = { attemptsBefore: new Date(ctx.now().getTime() - 30 * DAY), eventsBefore: new Date(ctx.now().getTime() - 90 * DAY) };
    const totals = { attempts: 0, deliveries: 0, events: 0 };
    const legacy = await legacyOf(ctx);
    for (let round = 0; round < 6; round++) {
      const results = await Promise.all(instances.map((r) => r.sweep(legacy, cutoffs, BATCH)));
      for (const r of results) {
        totals.attempts += r.attempts;
        totals.deliveries += r.deliveries;
        totals.events += r.events;
      }
    }
    expect(totals).toEqual({ attempts: 6, deliveries: 6, events: 6 });
    expect(await counts(partnerId)).toEqual({ keys: 0, events: 0, deliveries: 0, attempts: 0 });
  });
});

describe('retention settings', () => {
  it('reads the defaults and overrides from the environment, and refuses periods under a day', () => {
    expect(loadConfig({}).retention).toEqual({ sweepMs: 60_000, batchSize: 1000, webhookAttemptMs: 30 * DAY, eventMs: 90 * DAY });
    const env = { RETENTION_SWEEP_MS: '5000', RETENTION_BATCH_SIZE: '50', WEBHOOK_ATTEMPT_RETENTION_MS: String(7 * DAY), EVENT_RETENTION_MS: String(14 * DAY) };
    expect(loadConfig(env).retention).toEqual({ sweepMs: 5000, batchSize: 50, webhookAttemptMs: 7 * DAY, eventMs: 14 * DAY });
    expect(() => loadConfig({ EVENT_RETENTION_MS: '3600' })).toThrow(/EVENT_RETENTION_MS/);
    expect(() => loadConfig({ RETENTION_BATCH_SIZE: '0' })).toThrow(/RETENTION_BATCH_SIZE/);
  });
});

/*
 * The sweep's two safety rules, over random histories and random passes: a key inside its TTL is
 * never deleted, nor an attempt (or the delivery and event behind it) of a delivery still pending.
 */
describe.each([
  ['row by row, on the legacy partitions', legacyLayoutContext],
  ['by whole months, on monthly partitions', createTestContext],
])('retention safety over random histories: %s', (_layout, context) => {
  let ctx: TestContext;
  beforeAll(async () => {
    const retention: Config['retention'] = { ...testConfig().retention, batchSize: 3 };
    ctx = await context({ config: { retention } });
  });
  afterAll(() => ctx.close());

  it('never deletes a live idempotency key or anything of a pending delivery', async () => {
    let a = 2026;
    const rand = (n: number) => {
      a = (Math.imul(a, 1103515245) + 12345) >>> 0;
      return a % n;
    };
    const seed = seeder(ctx);
    const repo = createIdempotencyRepository(ctx.deps.db);
    const { id: partnerId } = await ctx.partner();
    const webhook = await seed.webhook(partnerId);
    const keys: { key: string; expiresAt: number }[] = [];
    const pending: { event: string; delivery: string; attempts: string[] }[] = [];
    let deleted = 0;

    for (let round = 0; round < 8; round++) {
      for (let i = 0; i < 6; i++) {
        const now = ctx.now();
        const expiresAt = new Date(now.getTime() + (rand(5) - 2) * DAY + rand(1000));
        const key = `k-${round}-${i}`;
        await repo.claim({ partnerId, key, requestHash: 'h', now, lockUntil: now, expiresAt });
        keys.push({ key, expiresAt: expiresAt.getTime() });
        const event = await seed.event(partnerId, rand(120) * DAY);
        const status = (['pending', 'delivered', 'failed', 'canceled'] as const)[rand(4)] ?? 'pending';
        const d = await seed.delivery(webhook, event, status, [rand(120) * DAY, rand(60) * DAY]);
        if (status === 'pending') pending.push({ event, delivery: d.id, attempts: d.attempts });
      }
      for (let pass = 0; pass < 1 + rand(3); pass++) await sweepJob(ctx).run();

      const left = new Set(await keysOf(ctx, partnerId));
      const live = keys.filter((k) => k.expiresAt > ctx.now().getTime());
      for (const k of live) expect(left.has(k.key), `live key ${k.key}`).toBe(true);
      deleted += keys.length - left.size;
      expect(await existing(ctx, 'events', pending.map((p) => p.event))).toEqual(new Set(pending.map((p) => p.event)));
      expect(await existing(ctx, 'webhook_deliveries', pending.map((p) => p.delivery))).toEqual(new Set(pending.map((p) => p.delivery)));
      const attempts = pending.flatMap((p) => p.attempts);
      expect(await existing(ctx, 'webhook_attempts', attempts)).toEqual(new Set(attempts));
      ctx.advance(rand(3) * DAY);
    }
    // The histories must have given the sweep something to delete, or the rules were never tested.
    expect(deleted).toBeGreaterThan(0);
    const { events } = await ctx.deps.db
      .selectFrom('events')
      .select((eb) => eb.fn.countAll<number>().as('events'))
      .where('partner_id', '=', partnerId)
      .executeTakeFirstOrThrow();
    expect(Number(events)).toBeLessThan(8 * 6);
  });
});
