import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestContext, type TestContext } from '../helpers/test-context.js';
import { checkInvariants, kyselyRunner } from '../helpers/invariants.js';
import { createIdempotencyRepository } from '../../src/db/repositories/idempotency.repository.js';
import { cancelPayment, partnerWithInvoice, pay, type PaymentCreated } from '../helpers/api.js';

const MINUTE = 60_000;

let ctx: TestContext;
let ttlMs: number;

beforeAll(async () => {
  ctx = await createTestContext();
  ttlMs = ctx.config.idempotencyTtlMs;
});
afterAll(() => ctx.close());

/** POST /payments with an idempotency key. */
const payWithKey = (apiKey: string, key: string, payload: object) => pay(ctx, apiKey, payload, { 'x-idempotency-key': key });

async function cancel(apiKey: string, id: string): Promise<void> {
  const res = await cancelPayment(ctx, apiKey, id);
  expect(res.statusCode).toBe(200);
}

async function paymentCount(partnerId: string): Promise<number> {
  return (await ctx.deps.db.selectFrom('payments').select('id').where('partner_id', '=', partnerId).execute()).length;
}

describe('idempotency key expiry', () => {
  it('replays until IDEMPOTENCY_TTL_MS has passed, then treats the same key and body as a new request', async () => {
    const { partner: p, invoice } = await partnerWithInvoice(ctx, 'etax');
    const body = { invoiceId: invoice.id };
    const first = await payWithKey(p.apiKey, 'k-same-body', body);
    expect(first.statusCode).toBe(201);
    const firstId = first.json<PaymentCreated>().id;
    await cancel(p.apiKey, firstId);

    ctx.advance(ttlMs - MINUTE);
    const replay = await payWithKey(p.apiKey, 'k-same-body', body);
    expect(replay.statusCode).toBe(201);
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(replay.json<PaymentCreated>()).toMatchObject({ id: firstId, message: 'idempotent' });

    ctx.advance(2 * MINUTE);
    const fresh = await payWithKey(p.apiKey, 'k-same-body', body);
    expect(fresh.statusCode).toBe(201);
    expect(fresh.headers['idempotent-replayed']).toBeUndefined();
    const freshId = fresh.json<PaymentCreated>().id;
    expect(freshId).not.toBe(firstId);
    expect(fresh.json<PaymentCreated>().message).toBeUndefined();
    // The old payment is untouched; only the key was reused.
    const old = await ctx.deps.db.selectFrom('payments').select('status').where('id', '=', firstId).executeTakeFirstOrThrow();
    expect(old.status).toBe('canceled');

    // The new key is live for a full TTL of its own.
    const replayOfFresh = await payWithKey(p.apiKey, 'k-same-body', body);
    expect(replayOfFresh.headers['idempotent-replayed']).toBe('true');
    expect(replayOfFresh.json<PaymentCreated>().id).toBe(freshId);
    await cancel(p.apiKey, freshId);
  });

  it('refuses a different body before expiry (422) and accepts it as a new payment after (201)', async () => {
    // The other body pays part of the invoice, which this ministry takes.
    const { partner: p, invoice } = await partnerWithInvoice(ctx, 'police', { allowPartial: true });
    const invoiceId = invoice.id;
    const first = await payWithKey(p.apiKey, 'k-other-body', { invoiceId });
    expect(first.statusCode).toBe(201);
    const firstId = first.json<PaymentCreated>().id;
    await cancel(p.apiKey, firstId);

    ctx.advance(ttlMs - MINUTE);
    expect((await payWithKey(p.apiKey, 'k-other-body', { invoiceId, amount: 100 })).statusCode).toBe(422);

    ctx.advance(2 * MINUTE);
    const fresh = await payWithKey(p.apiKey, 'k-other-body', { invoiceId, amount: 100 });
    expect(fresh.statusCode).toBe(201);
    expect(fresh.json<PaymentCreated>()).toMatchObject({ amount: 100, status: 'submitted' });
    expect(fresh.json<PaymentCreated>().id).not.toBe(firstId);
    expect(await paymentCount(p.id)).toBe(2);
    await cancel(p.apiKey, fresh.json<PaymentCreated>().id);
  });

  it('lets exactly one of many concurrent requests with an expired key create a payment', async () => {
    const { partner: p, invoice } = await partnerWithInvoice(ctx, 'mof');
    const body = { invoiceId: invoice.id };
    const first = await payWithKey(p.apiKey, 'k-burst', body);
    expect(first.statusCode).toBe(201);
    await cancel(p.apiKey, first.json<PaymentCreated>().id);

    ctx.advance(ttlMs + MINUTE);
    const results = await Promise.all(Array.from({ length: 10 }, () => payWithKey(p.apiKey, 'k-burst', body)));
    expect(results.every((r) => r.statusCode === 201 || r.statusCode === 409)).toBe(true);
    const created = results.filter((r) => r.statusCode === 201 && r.headers['idempotent-replayed'] === undefined);
    expect(created).toHaveLength(1);
    const ids = new Set(results.filter((r) => r.statusCode === 201).map((r) => r.json<PaymentCreated>().id));
    expect(ids.size).toBe(1);
    expect(ids.has(first.json<PaymentCreated>().id)).toBe(false);
    expect(await paymentCount(p.id)).toBe(2);
    expect(await checkInvariants(kyselyRunner(ctx.deps.db))).toEqual([]);
    await cancel(p.apiKey, [...ids][0] as string);
  });
});

describe('idempotency repository claim of an expired key', () => {
  const claimInput = (partnerId: string, key: string, requestHash: string, now: Date) => ({
    partnerId,
    key,
    requestHash,
    now,
    lockUntil: new Date(now.getTime() + MINUTE),
    expiresAt: new Date(now.getTime() + ttlMs),
  });

  it.each([
    ['the same body', 'h2', 'in_flight'],
    ['different bodies', 'h3', 'mismatch'],
  ])('gives one winner to two concurrent claims with %s', async (_label, otherHash, loserKind) => {
    const repo = createIdempotencyRepository(ctx.deps.db);
    const { id: partnerId } = await ctx.partner();
    const key = `k-race-${otherHash}`;
    const t0 = ctx.now();
    const first = await repo.claim(claimInput(partnerId, key, 'h1', t0));
    if (first.kind !== 'claimed') throw new Error(`expected a claim, got ${first.kind}`);
    expect(await repo.complete({ partnerId, key, token: first.token }, 'created', { id: 'old' })).toBe(true);

    const later = new Date(t0.getTime() + ttlMs);
    const claims = await Promise.all([repo.claim(claimInput(partnerId, key, 'h2', later)), repo.claim(claimInput(partnerId, key, otherHash, later))]);
    const kinds = claims.map((c) => c.kind).sort();
    expect(kinds).toEqual(['claimed', loserKind].sort());
    const row = await ctx.deps.db.selectFrom('idempotency_keys').selectAll().where('partner_id', '=', partnerId).where('key', '=', key).executeTakeFirstOrThrow();
    // The winner holds the key under a token of its own, not the expired claim's.
    expect(claims.find((c) => c.kind === 'claimed')).toEqual({ kind: 'claimed', paymentId: null, token: row.lease_token });
    expect(row.lease_token).not.toBe(first.token);
    expect(row).toMatchObject({ state: 'in_progress', response_body: null, response_status: null, payment_id: null });
    expect(row.expires_at.getTime()).toBe(later.getTime() + ttlMs);
  });

  it('keeps a key that expires exactly now as expired, and one a millisecond later as live', async () => {
    const repo = createIdempotencyRepository(ctx.deps.db);
    const { id: partnerId } = await ctx.partner();
    const t0 = ctx.now();
    const first = await repo.claim(claimInput(partnerId, 'k-edge', 'h1', t0));
    if (first.kind !== 'claimed') throw new Error(`expected a claim, got ${first.kind}`);
    expect(await repo.complete({ partnerId, key: 'k-edge', token: first.token }, 'created', { id: 'old' })).toBe(true);
    const beforeExpiry = new Date(t0.getTime() + ttlMs - 1);
    expect(await repo.claim(claimInput(partnerId, 'k-edge', 'h1', beforeExpiry))).toEqual({ kind: 'replay', outcome: 'created', body: { id: 'old' } });
    expect((await repo.claim(claimInput(partnerId, 'k-edge', 'h1', new Date(t0.getTime() + ttlMs)))).kind).toBe('claimed');
  });
});
