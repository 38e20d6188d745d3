import { randomBytes, randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createDatabase, migrateToLatest, type Db } from '../../src/db/database.js';
import { movePartitionedTables, unpartitionedTables } from '../../src/db/partition-move.js';
import { createPartitionRepository, PARTITIONED_TABLES, type PartitionedTable } from '../../src/db/repositories/partition.repository.js';
import { createOutbox } from '../../src/db/outbox.statements.js';
import { createDeliveryLogRepository } from '../../src/db/repositories/delivery-log.repository.js';
import { unitOfWorkRunner } from '../../src/db/unit-of-work.js';
import { addMonths, monthPartitionName, monthStart } from '../../src/domain/partition-months.js';
import type { Job } from '../../src/work/job-runner.js';
import { createTestContext, dropSchema, type TestContext } from '../helpers/test-context.js';
import { testConfig } from '../helpers/test-config.js';
import { initdbImage } from '../helpers/database-image.js';
import { BEFORE_PARTITIONS } from '../helpers/legacy-layout.js';

const DAY = 24 * 3600 * 1000;

function sweepJob(ctx: TestContext): Job {
  const job = ctx.deps.jobs.find((j) => j.name === 'retention-sweep');
  if (!job) throw new Error('the retention sweep is not among the background jobs');
  return job;
}

async function partitionNames(db: Db, table: PartitionedTable): Promise<string[]> {
  return (await createPartitionRepository(db).partitionsOf(table)).map((p) => p.name).sort();
}

async function count(db: Db, table: string, where = sql`true`): Promise<number> {
  const { rows } = await sql<{ n: number }>`SELECT count(*)::int AS n FROM ${sql.table(table)} WHERE ${where}`.execute(db);
  return rows[0]?.n ?? 0;
}

/** A partner with a webhook and a device, and rows dated in the past straight into the tables, as a history would have left them. */
async function history(db: Db) {
  const { rows } = await sql<{ partner: string; webhook: string; device: string }>`
    WITH p AS (INSERT INTO partners (name, qr_standard, environment) VALUES (${`Bank ${randomBytes(3).toString('hex')}`}, 'qrpay', 'sandbox') RETURNING id),
    w AS (INSERT INTO webhooks (partner_id, url, events, secret_ciphertext) SELECT id, 'https://hooks.example.com/x', '["payment.confirmed"]', 'x' FROM p RETURNING id),
    d AS (INSERT INTO devices (partner_id, user_id, fcm_token, platform) SELECT id, 'u-1', ${randomUUID()}, 'android' FROM p RETURNING id)
    SELECT p.id AS partner, w.id AS webhook, d.id AS device FROM p, w, d`.execute(db);
  const ids = rows[0];
  if (!ids) throw new Error('no partner');
  return {
    ...ids,
    /** An event at `at` with a delivery and a push of the given states, and attempts at the given times. */
    async event(at: Date, delivery: string, push: string, attemptsAt: Date[] = []): Promise<{ event: string; delivery: string }> {
      const { rows: made } = await sql<{ event: string; delivery: string }>`
        WITH e AS (INSERT INTO events (partner_id, event, payload, created_at) VALUES (${ids.partner}::uuid, 'payment.confirmed', '{}', ${at}::timestamptz) RETURNING id, created_at),
        wd AS (INSERT INTO webhook_deliveries (webhook_id, event_id, status, next_attempt_at, created_at) SELECT ${ids.webhook}::uuid, e.id, ${delivery}, now(), e.created_at FROM e RETURNING id),
        pd AS (INSERT INTO push_deliveries (event_id, partner_id, device_id, status, next_attempt_at, created_at) SELECT e.id, ${ids.partner}::uuid, ${ids.device}::uuid, ${push}, now(), e.created_at FROM e RETURNING id)
        SELECT e.id AS event, wd.id AS delivery FROM e, wd`.execute(db);
      const row = made[0];
      if (!row) throw new Error('no event');
      for (const [i, t] of attemptsAt.entries()) {
        await sql`INSERT INTO webhook_attempts (delivery_id, webhook_id, attempt, succeeded, duration_ms, created_at)
          VALUES (${row.delivery}::uuid, ${ids.webhook}::uuid, ${i + 1}, ${delivery === 'delivered'}, 5, ${t}::timestamptz)`.execute(db);
      }
      return row;
    },
  };
}

describe('monthly partitions on a new database', () => {
  let ctx: TestContext;
  beforeAll(async () => {
    ctx = await createTestContext();
  });
  afterAll(() => ctx.close());

  it('partitions the four tables that only grow by month: the current month and the two after it, and no legacy partition', async () => {
    const db = ctx.deps.db;
    expect(await unpartitionedTables(db)).toEqual([]);
    const { rows } = await sql<{ now: Date }>`SELECT now() AS now`.execute(db);
    const month = monthStart(new Date(rows[0]?.now ?? Date.now()));
    for (const table of PARTITIONED_TABLES) {
      expect(await partitionNames(db, table)).toEqual([0, 1, 2].map((i) => monthPartitionName(table, addMonths(month, i))));
    }
    expect(await createPartitionRepository(db).legacyTables()).toEqual({ events: null, deliveries: null, attempts: null, pushes: null });
  });

  it('makes a missing month ahead again on the next retention pass', async () => {
    const db = ctx.deps.db;
    const names = await partitionNames(db, 'webhook_attempts');
    const last = names.at(-1) as string;
    await sql`DROP TABLE ${sql.table(last)}`.execute(db);
    expect(await partitionNames(db, 'webhook_attempts')).not.toContain(last);
    await sweepJob(ctx).run();
    expect(await partitionNames(db, 'webhook_attempts')).toEqual(names);
  });

  it('keeps a delivery and its event in the same month, and one delivery per webhook and event', async () => {
    const db = ctx.deps.db;
    const h = await history(db);
    const made = await h.event(new Date(), 'pending', 'pending');
    const { rows } = await sql<{ same: boolean }>`
      SELECT d.created_at = e.created_at AS same FROM webhook_deliveries d JOIN events e ON e.id = d.event_id WHERE d.id = ${made.delivery}::uuid`.execute(db);
    expect(rows).toEqual([{ same: true }]);
    const again = sql`INSERT INTO webhook_deliveries (webhook_id, event_id, status, next_attempt_at, created_at)
      SELECT ${h.webhook}::uuid, id, 'pending', now(), created_at FROM events WHERE id = ${made.event}::uuid`;
    await expect(again.execute(db)).rejects.toMatchObject({ code: '23505' });
  });
});

describe('retention by whole months', () => {
  let ctx: TestContext;
  // Each case counts what a pass dropped of the whole database, so it starts from an empty one.
  beforeEach(async () => {
    ctx = await createTestContext();
  });
  afterEach(() => ctx.close());

  it('drops a month wholly past retention, keeps the months an unfinished delivery or a pending push holds, and drops attempts on their own clock', async () => {
    const db = ctx.deps.db;
    const partitions = createPartitionRepository(db);
    const ago = (days: number) => new Date(ctx.now().getTime() - days * DAY);
    for (const days of [150, 200, 250, 75, 100]) for (const table of PARTITIONED_TABLES) await partitions.createMonths(table, ago(days), 1);
    const h = await history(db);
    const finished = await h.event(ago(150), 'delivered', 'delivered', [ago(75)]);
    const heldByDelivery = await h.event(ago(200), 'pending', 'delivered', [ago(100)]);
    const heldByPush = await h.event(ago(250), 'failed', 'pending');
    const month = (table: PartitionedTable, days: number) => monthPartitionName(table, monthStart(ago(days)));

    await sweepJob(ctx).run();

    const names = Object.fromEntries(await Promise.all(PARTITIONED_TABLES.map(async (t) => [t, await partitionNames(db, t)] as const)));
    for (const table of ['events', 'webhook_deliveries', 'push_deliveries'] as const) {
      expect(names[table]).not.toContain(month(table, 150));
      expect(names[table]).toContain(month(table, 200));
      expect(names[table]).toContain(month(table, 250));
    }
    expect(names.webhook_attempts).not.toContain(month('webhook_attempts', 75));
    expect(names.webhook_attempts).toContain(month('webhook_attempts', 100));
    expect(await count(db, 'events', sql`id = ${finished.event}::uuid`)).toBe(0);
    for (const held of [heldByDelivery, heldByPush]) {
      expect(await count(db, 'events', sql`id = ${held.event}::uuid`)).toBe(1);
      expect(await count(db, 'webhook_deliveries', sql`id = ${held.delivery}::uuid`)).toBe(1);
    }
    expect(await count(db, 'webhook_attempts', sql`delivery_id = ${heldByDelivery.delivery}::uuid`)).toBe(1);

    // Once they are finished, the next pass takes them.
    await sql`UPDATE webhook_deliveries SET status = 'delivered' WHERE id = ${heldByDelivery.delivery}::uuid`.execute(db);
    await sql`UPDATE push_deliveries SET status = 'delivered' WHERE event_id = ${heldByPush.event}::uuid`.execute(db);
    await sweepJob(ctx).run();
    for (const table of ['events', 'webhook_deliveries', 'push_deliveries'] as const) {
      expect(await partitionNames(db, table)).not.toContain(month(table, 200));
      expect(await partitionNames(db, table)).not.toContain(month(table, 250));
    }
    expect(await partitionNames(db, 'webhook_attempts')).not.toContain(month('webhook_attempts', 100));
  });

  it("never drops the month the database writes in, however far ahead the service's clock runs", async () => {
    const db = ctx.deps.db;
    const h = await history(db);
    const before = await partitionNames(db, 'events');
    ctx.advance(400 * DAY);
    await sweepJob(ctx).run();
    expect(await partitionNames(db, 'events')).toEqual(before);
    await h.event(new Date(), 'delivered', 'delivered', [new Date()]);
  });

  it('lets several instances drop at once: each month goes once, without an error', async () => {
    const db = ctx.deps.db;
    const ago = (days: number) => new Date(ctx.now().getTime() - days * DAY);
    for (const days of [150, 190]) for (const table of PARTITIONED_TABLES) await createPartitionRepository(db).createMonths(table, ago(days), 1);
    const h = await history(db);
    await h.event(ago(150), 'delivered', 'delivered', [ago(150)]);
    await h.event(ago(190), 'canceled', 'skipped', [ago(190)]);
    const retention = { eventsBefore: ago(90), attemptsBefore: ago(30) };
    const passes = await Promise.all([1, 2, 3].map(() => createPartitionRepository(db).dropExpired(retention)));
    const dropped = passes.flatMap((p) => p.dropped).sort();
    const expected = [150, 190].flatMap((days) => PARTITIONED_TABLES.map((t) => monthPartitionName(t, monthStart(ago(days))))).sort();
    expect(dropped).toEqual(expected);
    expect(await count(db, 'events', sql`partner_id = ${h.partner}::uuid`)).toBe(0);
  });
});

/**
 * A database in service before the partitions (migrated to 033, with a history in each table),
 * moved by the next start while a writer keeps appending events with their deliveries and pushes.
 */
describe('the move to monthly partitions on a populated database', () => {
  const { databaseUrl } = testConfig();
  let db: Db;
  let schema: string | undefined;
  beforeEach(async () => {
    schema = databaseUrl ? `t_${randomBytes(6).toString('hex')}` : undefined;
    db = await createDatabase({ databaseUrl: databaseUrl ?? null, dataDir: 'memory://', schema, image: databaseUrl ? undefined : await initdbImage() });
    await migrateToLatest(db, schema, BEFORE_PARTITIONS);
  });
  afterEach(async () => {
    await db?.destroy();
    if (databaseUrl && schema) await dropSchema(databaseUrl, schema);
  });

  async function seedHistory(n: number) {
    const h = await history(db);
    // n events over the past 300 days, each with a delivery, a push and an attempt; every tenth still pending.
    await sql`
      WITH e AS (
        INSERT INTO events (partner_id, event, payload, created_at)
        SELECT ${h.partner}::uuid, 'payment.confirmed', '{}', now() - (g * interval '300 days') / ${n} FROM generate_series(1, ${n}) g
        RETURNING id, created_at
      ), wd AS (
        INSERT INTO webhook_deliveries (webhook_id, event_id, status, next_attempt_at, created_at)
        SELECT ${h.webhook}::uuid, id, CASE WHEN random() < 0.1 THEN 'pending' ELSE 'delivered' END, now(), created_at FROM e RETURNING id, created_at
      ), wa AS (
        INSERT INTO webhook_attempts (delivery_id, webhook_id, attempt, succeeded, duration_ms, created_at)
        SELECT id, ${h.webhook}::uuid, 1, true, 5, created_at FROM wd RETURNING id
      )
      INSERT INTO push_deliveries (event_id, partner_id, device_id, status, next_attempt_at, created_at)
      SELECT id, ${h.partner}::uuid, ${h.device}::uuid, 'delivered', now(), created_at FROM e`.execute(db);
    return h;
  }

  it('keeps every row, written before and during the move, in place: the old table is the legacy partition up to the cutover, and months follow it', async () => {
    const h = await seedHistory(2000);
    const before = Object.fromEntries(await Promise.all(PARTITIONED_TABLES.map(async (t) => [t, await count(db, t)] as const)));
    const outbox = createOutbox({ now: () => new Date() });
    const uow = unitOfWorkRunner(db);
    let writing = true;
    let written = 0;
    const errors: unknown[] = [];
    const writer = (async () => {
      while (writing) {
        try {
          await uow((u) => outbox.append(u, h.partner, { event: 'payment.confirmed', data: { id: randomUUID(), amount: 100, partnerReference: null } }));
          written++;
        } catch (err) {
          errors.push(err);
        }
        await new Promise((r) => setTimeout(r, 2));
      }
    })();
    try {
      await migrateToLatest(db, schema);
    } finally {
      writing = false;
      await writer;
    }
    expect(errors).toEqual([]);
    expect(written).toBeGreaterThan(0);
    expect(await unpartitionedTables(db)).toEqual([]);
    // The writer's events reached its webhook (one delivery each) from before the move and after it.
    expect(await count(db, 'events')).toBe((before.events ?? 0) + written);
    expect(await count(db, 'webhook_deliveries')).toBe((before.webhook_deliveries ?? 0) + written);
    expect(await count(db, 'webhook_attempts')).toBe(before.webhook_attempts);
    expect(await count(db, 'push_deliveries')).toBe(before.push_deliveries);

    const { rows } = await sql<{ now: Date }>`SELECT now() AS now`.execute(db);
    const now = new Date(rows[0]?.now ?? Date.now());
    for (const table of PARTITIONED_TABLES) {
      const parts = await createPartitionRepository(db).partitionsOf(table);
      const legacy = parts.find((p) => p.name === `${table}_legacy`);
      expect(legacy?.from).toBeNull();
      // At least a week ahead, on a month boundary, and the months after it exist.
      expect(legacy?.to && legacy.to.getTime() - now.getTime()).toBeGreaterThanOrEqual(7 * DAY);
      expect(legacy?.to?.getUTCDate()).toBe(1);
      expect(parts.some((p) => p.from?.getTime() === legacy?.to?.getTime())).toBe(true);
    }
    // No foreign key points into a partitioned table; the unique (webhook, event) still holds.
    const { rows: fks } = await sql<{ n: number }>`
      SELECT count(*)::int AS n FROM pg_constraint WHERE contype = 'f'
      AND confrelid = ANY(ARRAY[to_regclass('events'), to_regclass('webhook_deliveries')]::regclass[])`.execute(db);
    expect(fks[0]?.n).toBe(0);
    const again = sql`INSERT INTO webhook_deliveries (webhook_id, event_id, status, next_attempt_at, created_at)
      SELECT webhook_id, event_id, 'pending', now(), created_at FROM webhook_deliveries LIMIT 1`;
    await expect(again.execute(db)).rejects.toMatchObject({ code: '23505' });
    // Repeating is a no-op.
    expect((await movePartitionedTables(db)).moved).toEqual([]);
  });

  it.skipIf(!databaseUrl)('waits out a transaction that holds a table, a second at a time, and moves once it is gone', async () => {
    await seedHistory(200);
    const other = await createDatabase({ databaseUrl: databaseUrl ?? null, dataDir: 'memory://', schema, poolSize: 1 });
    try {
      let release = () => {};
      const released = new Promise<void>((r) => {
        release = r;
      });
      let locked = () => {};
      const holding = new Promise<void>((r) => {
        locked = r;
      });
      const holder = other.transaction().execute(async (trx) => {
        // A reader's share lock, without a snapshot (a snapshot would hold up the concurrent index builds, which block nobody): only the exclusive steps wait.
        await sql`LOCK TABLE events IN ACCESS SHARE MODE`.execute(trx);
        locked();
        await released;
      });
      await holding;
      const move = movePartitionedTables(db);
      // Long enough for the move to have given up on its lock at least twice.
      await new Promise((r) => setTimeout(r, 2500));
      expect(await unpartitionedTables(db)).toEqual([...PARTITIONED_TABLES]);
      release();
      await holder;
      const report = await move;
      expect(report.moved).toEqual([...PARTITIONED_TABLES]);
      expect(report.lockWaits).toBeGreaterThanOrEqual(2);
      expect(await unpartitionedTables(db)).toEqual([]);
    } finally {
      await other.destroy();
    }
  });

  /** A delivery of `event` stamped `later` than it, as a recovery of a release before the partitions queued one. */
  async function recoveredDelivery(h: { webhook: string }, event: { id: string; at: Date }, later: Date): Promise<string> {
    const { rows } = await sql<{ id: string }>`INSERT INTO webhook_deliveries (webhook_id, event_id, status, next_attempt_at, created_at)
      VALUES (${h.webhook}::uuid, ${event.id}::uuid, 'delivered', now(), ${later}::timestamptz) RETURNING id`.execute(db);
    const id = rows[0]?.id;
    if (!id) throw new Error('no delivery');
    return id;
  }

  async function eventAt(h: { partner: string }, at: Date): Promise<{ id: string; at: Date }> {
    const { rows } = await sql<{ id: string; at: Date }>`INSERT INTO events (partner_id, event, payload, created_at)
      VALUES (${h.partner}::uuid, 'payment.confirmed', '{}', ${at}::timestamptz) RETURNING id, created_at AS at`.execute(db);
    const row = rows[0];
    if (!row) throw new Error('no event');
    return row;
  }

  const createdAt = async (delivery: string) => (await sql<{ at: Date }>`SELECT created_at AS at FROM webhook_deliveries WHERE id = ${delivery}::uuid`.execute(db)).rows[0]?.at;
  const requeue = (h: { webhook: string }, event: { id: string; at: Date }) =>
    sql`INSERT INTO webhook_deliveries (webhook_id, event_id, status, next_attempt_at, created_at) VALUES (${h.webhook}::uuid, ${event.id}::uuid, 'pending', now(), ${event.at}::timestamptz)`;

  it("gives a delivery a recovery queued before the move its event's time, so the (webhook, event) key still refuses a second one", async () => {
    const h = await history(db);
    const event = await eventAt(h, new Date(Date.now() - 40 * DAY));
    const delivery = await recoveredDelivery(h, event, new Date(Date.now() - 2 * DAY));
    await migrateToLatest(db, schema);
    expect(await unpartitionedTables(db)).toEqual([]);
    expect(await createdAt(delivery)).toEqual(event.at);
    await expect(requeue(h, event).execute(db)).rejects.toMatchObject({ code: '23505' });
  });

  it('aligns such a delivery on a database moved already, and leaves one alone whose twin a recovery queued since', async () => {
    const h = await seedHistory(10);
    await migrateToLatest(db, schema, '036-operator-list-indexes');
    await movePartitionedTables(db);
    // Written into the legacy partition after the move, as the previous release left them: the move's own alignment has run.
    const lone = await eventAt(h, new Date(Date.now() - 60 * DAY));
    const loneDelivery = await recoveredDelivery(h, lone, new Date(Date.now() - 3 * DAY));
    const twinned = await eventAt(h, new Date(Date.now() - 50 * DAY));
    const staleAt = new Date(Date.now() - 3 * DAY);
    const stale = await recoveredDelivery(h, twinned, staleAt);
    await requeue(h, twinned).execute(db);
    await migrateToLatest(db, schema);
    expect(await createdAt(loneDelivery)).toEqual(lone.at);
    await expect(requeue(h, lone).execute(db)).rejects.toMatchObject({ code: '23505' });
    expect(await createdAt(stale)).toEqual(staleAt);
    expect(await count(db, 'webhook_deliveries', sql`event_id = ${twinned.id}::uuid`)).toBe(2);
  });

  it("lists an attempt logged before attempts carried their delivery's time beside one that carries it", async () => {
    const h = await seedHistory(5);
    const { rows: legacy } = await sql<{ id: string }>`SELECT id FROM webhook_attempts ORDER BY created_at DESC LIMIT 1`.execute(db);
    await migrateToLatest(db, schema);
    const event = await eventAt(h, new Date(Date.now() - DAY));
    const { rows: made } = await sql<{ id: string; created_at: string }>`INSERT INTO webhook_deliveries (webhook_id, event_id, status, attempts, next_attempt_at, created_at)
      VALUES (${h.webhook}::uuid, ${event.id}::uuid, 'delivered', 1, now(), ${event.at}::timestamptz) RETURNING id, created_at::text`.execute(db);
    const delivery = made[0];
    if (!delivery) throw new Error('no delivery');
    const { rows: attempted } = await sql<{ id: string }>`INSERT INTO webhook_attempts (delivery_id, delivery_created_at, webhook_id, attempt, succeeded, duration_ms, created_at)
      VALUES (${delivery.id}::uuid, ${delivery.created_at}::timestamptz, ${h.webhook}::uuid, 1, true, 5, now()) RETURNING id`.execute(db);
    const log = await createDeliveryLogRepository(db).list(h.webhook, { status: 'succeeded' }, null, 50);
    const ids = log.map((entry) => entry.item_id);
    expect(ids[0]).toBe(attempted[0]?.id);
    expect(ids).toContain(legacy[0]?.id);
    expect(log).toHaveLength(6);
    expect(new Set(log.map((entry) => entry.event))).toEqual(new Set(['payment.confirmed']));
  });
});
