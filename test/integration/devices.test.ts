import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestContext, type TestContext } from '../helpers/test-context.js';

interface Device {
  id: string;
  platform: string;
  createdAt: string;
}

let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext();
});
afterAll(() => ctx.close());

const register = (key: string, payload: object) => ctx.api(key, { method: 'POST', url: '/api/v1/devices', payload });

describe('POST /devices', () => {
  it('creates with 201, then updates the same device with 200 and the same id', async () => {
    const { apiKey } = await ctx.partner();
    const first = await register(apiKey, { userId: 'user-1', fcmToken: 'token-abc', platform: 'android' });
    expect(first.statusCode).toBe(201);
    const created = first.json<Device>();
    expect(Object.keys(created).sort()).toEqual(['createdAt', 'id', 'platform']);
    expect(created.platform).toBe('android');

    const again = await register(apiKey, { userId: 'user-1', fcmToken: 'token-abc', platform: 'ios' });
    expect(again.statusCode).toBe(200);
    expect(again.json<Device>()).toEqual({ id: created.id, platform: 'ios', createdAt: created.createdAt });

    const otherToken = await register(apiKey, { userId: 'user-1', fcmToken: 'token-def', platform: 'ios' });
    expect(otherToken.statusCode).toBe(201);
    expect(otherToken.json<Device>().id).not.toBe(created.id);
  });

  it("keeps one partner's devices apart from another's", async () => {
    const a = await ctx.partner();
    const b = await ctx.partner();
    const payload = { userId: 'shared-user', fcmToken: 'shared-token', platform: 'ios' };
    const ra = await register(a.apiKey, payload);
    const rb = await register(b.apiKey, payload);
    expect(ra.statusCode).toBe(201);
    expect(rb.statusCode).toBe(201);
    expect(rb.json<Device>().id).not.toBe(ra.json<Device>().id);
  });

  it.each([
    ['an unknown platform', { platform: 'windows' }],
    ['an empty user id', { userId: '' }],
    ['a too long user id', { userId: 'u'.repeat(129) }],
    ['a too long token', { fcmToken: 't'.repeat(4097) }],
    ['a missing token', { fcmToken: undefined }],
    ['an extra field', { name: 'phone' }],
  ])('answers 400 for %s', async (_label, patch) => {
    const { apiKey } = await ctx.partner();
    const res = await register(apiKey, { userId: 'user-1', fcmToken: 'token-abc', platform: 'ios', ...patch });
    expect(res.statusCode).toBe(400);
    expect(res.json<{ error: string }>().error).toBe('Bad Request');
  });
});
