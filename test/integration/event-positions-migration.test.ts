import { randomBytes, randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDatabase, migrateToLatest, type Db } from '../../src/db/database.js';
import { createEventLogRepository } from '../../src/db/repositories/event-log.repository.js';
import { createOutbox } from '../../src/db/outbox.statements.js';
import { unitOfWorkRunner } from '../../src/db/unit-of-work.js';
import { testConfig } from '../helpers/test-config.js';
import { dropSchema } from '../helpers/test-context.js';
import { initdbImage } from '../helpers/database-image.js';

const { databaseUrl } = testConfig();
const schema = databaseUrl ? `t_${randomBytes(6).toString('hex')}` : undefined;

/** Events written before migration 021 get positions in (created_at, id) order, and new ones follow them. */
describe('migration 021 (event positions) on existing events', () => {
  let db: Db;
  beforeAll(async () => {
    db = await createDatabase({ databaseUrl: databaseUrl ?? null, dataDir: 'memory://', schema, image: databaseUrl ? undefined : await initdbImage() });
    // Through the service's own migrate, which survives another test dropping its schema meanwhile.
    await migrateToLatest(db, schema, '020-status-check-lease');
  });
  afterAll(async () => {
    await db?.destroy();
    if (databaseUrl && schema) await dropSchema(databaseUrl, schema);
  });

  it('numbers them 1..n in (created_at, id) order, keeps n as the last position, and positions later events after them', async () => {
    const { rows } = await sql<{ id: string }>`
      INSERT INTO partners (name, qr_standard, environment) VALUES ('Bank', 'qrpay', 'sandbox') RETURNING id`.execute(db);
    const partnerId = rows[0]?.id as string;
    // Out of time order, and two at the same instant (then the id decides).
    const times = ['2026-01-03T00:00:00Z', '2026-01-01T00:00:00Z', '2026-01-02T00:00:00Z', '2026-01-02T00:00:00Z'];
    for (const at of times) {
      const paymentId = randomUUID();
      await sql`INSERT INTO events (partner_id, event, payload, payment_id, created_at)
        VALUES (${partnerId}::uuid, 'payment.submitted', ${JSON.stringify({ id: paymentId, invoiceId: randomUUID() })}::jsonb, ${paymentId}::uuid, ${at}::timestamptz)`.execute(db);
    }
    const before = await sql<{ id: string }>`SELECT id FROM events ORDER BY created_at, id`.execute(db);

    await migrateToLatest(db, schema);

    const after = await sql<{ id: string; sequence: string }>`SELECT id, sequence::text AS sequence FROM events ORDER BY sequence`.execute(db);
    expect(after.rows.map((r) => r.id)).toEqual(before.rows.map((r) => r.id));
    expect(after.rows.map((r) => Number(r.sequence))).toEqual([1, 2, 3, 4]);
    const last = await sql<{ last: string }>`SELECT last::text AS last FROM event_positions`.execute(db);
    expect(last.rows).toEqual([{ last: '4' }]);

    // Retention removed the newest; its number is not given again.
    await sql`DELETE FROM events WHERE sequence = 4`.execute(db);
    const eventId = await unitOfWorkRunner(db)((uow) =>
      createOutbox({ now: () => new Date() }).append(uow, partnerId, { event: 'payment.confirmed', data: { id: randomUUID(), amount: 100, partnerReference: null } }),
    );
    const log = createEventLogRepository(db);
    await log.assignPending();
    const feed = await log.listAfter(partnerId, {}, 0, 10);
    expect(feed.map((e) => e.sequence)).toEqual([1, 2, 3, 5]);
    expect(feed.at(-1)?.id).toBe(eventId);
  });
});
