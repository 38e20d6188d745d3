import { randomUUID } from 'node:crypto';
import { unitOfWorkRunner } from '../../src/db/unit-of-work.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Static } from 'typebox';
import { createTestContext, type TestContext } from '../helpers/test-context.js';
import { partnerWithPayment, type Partner } from '../helpers/api.js';
import { createEventRepository, type PaymentEvent } from '../../src/db/repositories/event.repository.js';
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
  const outbox = createEventRepository({ now: ctx.now });
  for (const e of events) {
    await unitOfWorkRunner(ctx.deps.db)((uow) => outbox.append(uow, partnerId, e));
    // Each its own millisecond: two appends within one would tie, and a time range could not part them.
    ctx.advance(1);
  }
}

describe('GET /events', () => {
  it("lists the partner's own events, newest first, with the webhook body's data, whether or not it has a webhook", async () => {
    const { partner, invoice, payment } = await partnerWithPayment(ctx, 'mof');
    const other = await partnerWithPayment(ctx, 'mof');

    const { items, nextCursor } = await list(partner);
    expect(nextCursor).toBeNull();
    expect(items).toEqual([{ id: expect.any(String), type: 'payment.submitted', createdAt: expect.any(String), data: { id: payment.id, invoiceId: invoice.id } }]);
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
      { event: 'payment.submitted', data: { id: p1, invoiceId: randomUUID() } },
      { event: 'payment.submitted', data: { id: p2, invoiceId: randomUUID() } },
      { event: 'payment.confirmed', data: { id: p1, amount: 1500.5 } },
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
      Array.from({ length: 120 }, () => ({ event: 'payment.submitted' as const, data: { id: randomUUID(), invoiceId: randomUUID() } })),
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
