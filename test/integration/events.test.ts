import { randomUUID } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import { sql } from 'kysely';
import { trxOf, unitOfWorkRunner } from '../../src/db/unit-of-work.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Static } from 'typebox';
import { createTestContext, type TestContext } from '../helpers/test-context.js';
import { testConfig } from '../helpers/test-config.js';
import { encodeEventCursor } from '../../src/domain/event-cursor.js';
import { badRequest, ownInvoice, partnerWithPayment, payOk, type Partner } from '../helpers/api.js';
import { createOutbox, type PaymentEvent } from '../../src/db/outbox.statements.js';
import { createEventLogRepository } from '../../src/db/repositories/event-log.repository.js';
import type { EventBody, EventListBody } from '../../src/schemas/event.schema.js';

type Event = Static<typeof EventBody>;
type EventList = Static<typeof EventListBody>;

let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext();
});
afterAll(() => ctx.close());

async function list(partner: Partner, query = ''): Promise<EventList> {
  const res = await ctx.api(partner.apiKey, { method: 'GET', url: `/api/v1/events${query}` });
  expect(res.statusCode, res.body).toBe(200);
  return res.json<EventList>();
}

/** Writes events through the outbox the payment services use (without a payment behind each). */
async function appendEvents(partnerId: string, events: PaymentEvent[]): Promise<void> {
  const outbox = createOutbox({ now: ctx.now });
  for (const e of events) {
    await unitOfWorkRunner(ctx.deps.db)((uow) => outbox.append(uow, partnerId, e));
    // Each its own millisecond: two appends within one would tie, and a time range could not part them.
    ctx.advance(1);
  }
}

/**
 * Polls the feed every 10 ms from the start, each event once and in order, until a poll that
 * began after `done()` turned true finds the end of the feed.
 */
async function followFeed(partner: Partner, done: () => boolean): Promise<Event[]> {
  const followed: Event[] = [];
  let last = 0;
  for (;;) {
    const finished = done();
    const { items } = await list(partner, `?afterSequence=${last}&limit=100`);
    for (const e of items) {
      expect(e.sequence).toBeGreaterThan(last);
      last = e.sequence;
      followed.push(e);
    }
    if (finished && items.length < 100) return followed;
    await delay(10);
  }
}

describe('GET /events', () => {
  it("lists the partner's own events, newest first, with the webhook body's data, whether or not it has a webhook", async () => {
    const { partner, invoice, payment } = await partnerWithPayment(ctx, 'mof');
    const other = await partnerWithPayment(ctx, 'mof');

    const { items, nextCursor } = await list(partner);
    expect(nextCursor).toBeNull();
    expect(items).toEqual([
      { id: expect.any(String), type: 'payment.submitted', createdAt: expect.any(String), sequence: expect.any(Number), data: { id: payment.id, invoiceId: invoice.id, partnerReference: null } },
    ]);
    const event = items[0] as Event;

    const one = await ctx.api(partner.apiKey, { method: 'GET', url: `/api/v1/events/${event.id}` });
    expect(one.statusCode).toBe(200);
    expect(one.json()).toEqual(event);

    // Another partner's event is not found, neither listed nor by id.
    expect((await list(other.partner)).items.map((e) => e.data.id)).toEqual([other.payment.id]);
    expect((await ctx.api(other.partner.apiKey, { method: 'GET', url: `/api/v1/events/${event.id}` })).statusCode).toBe(404);
    expect((await ctx.api(partner.apiKey, { method: 'GET', url: `/api/v1/events/${randomUUID()}` })).statusCode).toBe(404);
  });

  it('filters by type, payment and time range', async () => {
    const partner = await ctx.partner();
    const [p1, p2] = [randomUUID(), randomUUID()];
    await appendEvents(partner.id, [
      { event: 'payment.submitted', data: { id: p1, invoiceId: randomUUID(), partnerReference: null } },
      { event: 'payment.submitted', data: { id: p2, invoiceId: randomUUID(), partnerReference: null } },
      { event: 'payment.confirmed', data: { id: p1, amount: 1500.5, partnerReference: null } },
    ]);
    const all = (await list(partner)).items;
    expect(all.map((e) => [e.type, e.data.id])).toEqual([
      ['payment.confirmed', p1],
      ['payment.submitted', p2],
      ['payment.submitted', p1],
    ]);
    expect((await list(partner, '?type=payment.confirmed')).items).toEqual([all[0]]);
    expect((await list(partner, `?paymentId=${p1}`)).items).toEqual([all[0], all[2]]);
    expect((await list(partner, `?paymentId=${p1}&type=payment.submitted`)).items).toEqual([all[2]]);
    const middle = all[1] as Event;
    // `from` includes its instant, `to` excludes it.
    expect((await list(partner, `?from=${middle.createdAt}`)).items).toEqual([all[0], middle]);
    expect((await list(partner, `?to=${middle.createdAt}`)).items).toEqual([all[2]]);
    expect((await list(partner, `?from=${middle.createdAt}&to=${all[0]?.createdAt}`)).items).toEqual([middle]);
    expect((await list(partner, `?paymentId=${randomUUID()}`)).items).toEqual([]);
  });

  it('pages through 120 events with the cursor, each once', async () => {
    const partner = await ctx.partner();
    await appendEvents(
      partner.id,
      Array.from({ length: 120 }, () => ({ event: 'payment.submitted' as const, data: { id: randomUUID(), invoiceId: randomUUID(), partnerReference: null } })),
    );
    const first = await list(partner);
    expect(first.items).toHaveLength(20);
    const seen = [...first.items];
    let cursor = first.nextCursor;
    let pages = 1;
    while (cursor) {
      const page = await list(partner, `?limit=50&cursor=${cursor}`);
      seen.push(...page.items);
      cursor = page.nextCursor;
      pages += 1;
    }
    expect(pages).toBe(3);
    expect(seen).toHaveLength(120);
    expect(new Set(seen.map((e) => e.id)).size).toBe(120);
    const times = seen.map((e) => Date.parse(e.createdAt));
    expect(times).toEqual([...times].sort((a, b) => b - a));
    const hundred = await list(partner, '?limit=100');
    expect(hundred.items.map((e) => e.id)).toEqual(seen.slice(0, 100).map((e) => e.id));
    const rest = await list(partner, `?limit=100&cursor=${hundred.nextCursor}`);
    expect(rest.items.map((e) => e.id)).toEqual(seen.slice(100).map((e) => e.id));
    expect(rest.nextCursor).toBeNull();
  });

  it.each([
    '?type=payment.refunded',
    '?type=webhook.test',
    '?paymentId=42',
    '?from=yesterday',
    '?to=2026-13-01T00:00:00Z',
    '?cursor=abc',
    '?cursor=not+a+cursor',
    '?afterSequence=-1',
    '?afterSequence=1.5',
    '?afterSequence=first',
    '?afterSequence=0&from=2026-01-01T00:00:00Z',
    '?afterSequence=0&to=2026-01-01T00:00:00Z',
    '?limit=0',
    '?limit=101',
    '?since=2026-01-01T00:00:00Z',
  ])('answers 400 for %s', async (query) => {
    const partner = await ctx.partner();
    const res = await ctx.api(partner.apiKey, { method: 'GET', url: `/api/v1/events${query}` });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ statusCode: 400, error: 'Bad Request' });
  });

  it('answers 400 for a malformed event id', async () => {
    const partner = await ctx.partner();
    expect((await ctx.api(partner.apiKey, { method: 'GET', url: '/api/v1/events/not-a-uuid' })).statusCode).toBe(400);
  });
});

const { databaseUrl } = testConfig();
const payment = (): PaymentEvent => ({ event: 'payment.submitted', data: { id: randomUUID(), invoiceId: randomUUID(), partnerReference: null } });

/** All of a partner's events, oldest first, page after page of the feed. */
async function feed(partner: Partner, after = 0): Promise<Event[]> {
  const out: Event[] = [];
  for (let last = after; ; ) {
    const { items } = await list(partner, `?afterSequence=${last}&limit=100`);
    out.push(...items);
    if (items.length < 100) return out;
    last = items.at(-1)?.sequence ?? last;
  }
}

describe('GET /events positions (sequence, afterSequence)', () => {
  it('gives every event a sequence, the same newest first, oldest first and by id', async () => {
    const partner = await ctx.partner();
    await appendEvents(partner.id, [payment(), payment(), { event: 'payment.confirmed', data: { id: randomUUID(), amount: 10, partnerReference: null } }]);
    const newest = (await list(partner)).items;
    const oldest = await list(partner, '?afterSequence=0');
    expect(oldest.nextCursor).toBeNull();
    expect(oldest.items).toEqual([...newest].reverse());
    const sequences = oldest.items.map((e) => e.sequence);
    expect(sequences.every((n) => Number.isInteger(n) && n > 0)).toBe(true);
    expect(sequences).toEqual([...sequences].sort((a, b) => a - b));
    expect(new Set(sequences).size).toBe(3);
    for (const e of newest) expect((await ctx.api(partner.apiKey, { method: 'GET', url: `/api/v1/events/${e.id}` })).json()).toEqual(e);
  });

  it('lists the events after a sequence, oldest first, filtered and limited', async () => {
    const partner = await ctx.partner();
    const p1 = randomUUID();
    await appendEvents(partner.id, [
      { event: 'payment.submitted', data: { id: p1, invoiceId: randomUUID(), partnerReference: null } },
      payment(),
      { event: 'payment.confirmed', data: { id: p1, amount: 1500.5, partnerReference: null } },
      payment(),
    ]);
    const all = await feed(partner);
    expect(all.map((e) => e.type)).toEqual(['payment.submitted', 'payment.submitted', 'payment.confirmed', 'payment.submitted']);
    const first = all[0] as Event;
    expect((await list(partner, `?afterSequence=${first.sequence}`)).items).toEqual(all.slice(1));
    expect((await list(partner, `?afterSequence=${first.sequence}&limit=2`)).items).toEqual(all.slice(1, 3));
    expect((await list(partner, `?afterSequence=0&paymentId=${p1}`)).items).toEqual([all[0], all[2]]);
    expect((await list(partner, `?afterSequence=0&type=payment.confirmed`)).items).toEqual([all[2]]);
    expect((await list(partner, `?afterSequence=${all.at(-1)?.sequence}`)).items).toEqual([]);
    // Another partner's feed holds none of them.
    expect(await feed(await ctx.partner())).toEqual([]);
  });

  it('positions at most a few batches per call, and the background job positions what is left', async () => {
    const job = ctx.deps.jobs.find((j) => j.name === 'event-positions');
    if (!job) throw new Error('no event-positions job');
    // Whatever earlier tests left unpositioned goes first (positions follow commit time).
    await job.run();
    const partner = await ctx.partner();
    await appendEvents(partner.id, Array.from({ length: 5 }, payment));
    const pending = async () => {
      const { rows } = await sql<{ n: string }>`SELECT count(*) AS n FROM events WHERE partner_id = ${partner.id}::uuid AND sequence IS NULL`.execute(ctx.deps.db);
      return Number(rows[0]?.n);
    };
    expect(await pending()).toBe(5);
    await createEventLogRepository(ctx.deps.db, { batchSize: 2, maxBatches: 2 }).assignPending();
    expect(await pending()).toBe(1);
    await job.run();
    expect(await pending()).toBe(0);
    const sequences = (await feed(partner)).map((e) => e.sequence);
    expect(sequences).toHaveLength(5);
    expect(sequences).toEqual([...sequences].sort((a, b) => a - b));
  });

  it('refuses afterSequence with a cursor', async () => {
    const partner = await ctx.partner();
    await appendEvents(partner.id, [payment(), payment()]);
    const { nextCursor } = await list(partner, '?limit=1');
    const res = await ctx.api(partner.apiKey, { method: 'GET', url: `/api/v1/events?afterSequence=0&cursor=${nextCursor}` });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual(badRequest(res, ['/afterSequence', 'afterSequence cannot be combined with cursor, from or to']));
  });

  it("refuses a cursor that is malformed, unknown or another partner's, as it refuses any bad parameter", async () => {
    const partner = await ctx.partner();
    const other = await ctx.partner();
    await appendEvents(partner.id, [payment(), payment()]);
    await appendEvents(other.id, [payment(), payment()]);
    const { nextCursor } = await list(other, '?limit=1');
    const b64 = (text: string) => Buffer.from(text).toString('base64url');
    const refused = [
      nextCursor as string, // minted for the other partner
      randomUUID(), // the form cursors had before they carried a position
      b64(`e9:${partner.id}:5`), // an unknown version
      b64(`e1:${partner.id}:0`),
      b64(`e1:${partner.id}:-3`),
      b64(`e1:${partner.id}:12345678901234567890`),
      b64('e1:5'),
      'abc',
    ];
    for (const cursor of refused) {
      const res = await ctx.api(partner.apiKey, { method: 'GET', url: `/api/v1/events?cursor=${cursor}` });
      expect(res.statusCode, cursor).toBe(400);
      expect(res.json()).toEqual(badRequest(res, ['/cursor', 'cursor must be the nextCursor of a previous page']));
    }
    // Its own cursor, made the same way, is taken.
    expect((await ctx.api(partner.apiKey, { method: 'GET', url: `/api/v1/events?cursor=${encodeEventCursor(partner.id, 10 ** 15)}` })).statusCode).toBe(200);
  });

  it('pages on after retention deleted the event a cursor came from', async () => {
    const partner = await ctx.partner();
    await appendEvents(partner.id, Array.from({ length: 9 }, payment));
    const all = (await list(partner, '?limit=100')).items;
    const first = await list(partner, '?limit=4');
    expect(first.items).toEqual(all.slice(0, 4));
    // The partner has no webhook and no devices: nothing else refers to the event.
    await sql`DELETE FROM events WHERE id = ${first.items[3]?.id}::uuid`.execute(ctx.deps.db);
    const second = await list(partner, `?limit=4&cursor=${first.nextCursor}`);
    expect(second.items).toEqual(all.slice(4, 8));
    const third = await list(partner, `?limit=4&cursor=${second.nextCursor}`);
    expect(third).toEqual({ items: all.slice(8), nextCursor: null });
  });

  // On PGlite (one connection) a transaction held open holds the only connection: no other
  // event could commit meanwhile, which is the case this test is about.
  it.skipIf(!databaseUrl)('withholds nothing for good: an event whose transaction commits late comes after every one already read', async () => {
    const partner = await ctx.partner();
    const outbox = createOutbox({ now: ctx.now });
    await appendEvents(partner.id, [payment()]);
    const before = await feed(partner);

    let written!: () => void;
    let release!: () => void;
    const isWritten = new Promise<void>((resolve) => (written = resolve));
    const released = new Promise<void>((resolve) => (release = resolve));
    // Its own connection from the pool, in its own transaction, the way the payment services write the outbox.
    const holder = unitOfWorkRunner(ctx.deps.db)(async (uow) => {
      const id = await outbox.append(uow, partner.id, payment());
      written();
      await released;
      return id;
    });
    await isWritten;

    const later: PaymentEvent[] = [payment(), payment(), payment()];
    await appendEvents(partner.id, later);
    const seen = await feed(partner, before.at(-1)?.sequence);
    expect(seen.map((e) => e.data.id)).toEqual(later.map((e) => e.data.id));

    release();
    const heldId = await holder;
    const after = await feed(partner, seen.at(-1)?.sequence);
    expect(after.map((e) => e.id)).toEqual([heldId]);
    expect(after[0]?.sequence).toBeGreaterThan(Math.max(...seen.map((e) => e.sequence)));
    // It started before the later ones: a poller going by createdAt would have skipped it.
    const byId = (await ctx.api(partner.apiKey, { method: 'GET', url: `/api/v1/events/${heldId}` })).json<Event>();
    expect(Date.parse(byId.createdAt)).toBeLessThanOrEqual(Math.min(...seen.map((e) => Date.parse(e.createdAt))));
  });

  // On PGlite (one connection) payments cannot overlap: there is no commit order to get wrong.
  it.skipIf(!databaseUrl)('a follower polling every 10 ms while 8 writers pay concurrently gets every payment event once, in sequence order', async () => {
    const partner = await ctx.partner();
    const perWriter = 6;
    const invoices = await Promise.all(Array.from({ length: 8 * perWriter }, () => ownInvoice(ctx, partner, 'mof')));
    let done = false;
    const paying = Promise.all(
      Array.from({ length: 8 }, async (_, w) => {
        for (const invoice of invoices.slice(w * perWriter, (w + 1) * perWriter)) await payOk(ctx, partner.apiKey, { invoiceId: invoice.id });
      }),
    ).finally(() => (done = true));

    const followed = await followFeed(partner, () => done);
    await paying;

    const all = await feed(partner);
    expect(all).toHaveLength(invoices.length);
    expect(new Set(all.map((e) => e.data.id)).size).toBe(invoices.length);
    expect(followed.map((e) => e.id)).toEqual(all.map((e) => e.id));
  });

  // On PGlite (one connection) writers cannot overlap: there is no commit order to get wrong.
  it.skipIf(!databaseUrl)('followers polling every 10 ms while 8 writers commit get every event once, in sequence order', async () => {
    const partner = await ctx.partner();
    const outbox = createOutbox({ now: ctx.now });
    const perWriter = 25;
    const writers = Array.from({ length: 8 }, async () => {
      for (let i = 0; i < perWriter; i++) {
        await unitOfWorkRunner(ctx.deps.db)(async (uow) => {
          await outbox.append(uow, partner.id, payment());
          // Transactions of uneven length, so they commit in another order than they started.
          await sql`SELECT pg_sleep(random() * 0.01)`.execute(trxOf(uow));
        });
      }
    });
    let done = false;
    const writing = Promise.all(writers).finally(() => (done = true));

    // Two of them, so two reads at a time find events to position and race for the assigner.
    const followers = await Promise.all([followFeed(partner, () => done), followFeed(partner, () => done)]);
    await writing;

    const all = await feed(partner);
    expect(all).toHaveLength(8 * perWriter);
    expect(new Set(all.map((e) => e.id)).size).toBe(all.length);
    for (const followed of followers) expect(followed.map((e) => e.id)).toEqual(all.map((e) => e.id));
  });
});
