import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestContext, type TestContext } from '../helpers/test-context.js';
import { startReceiver, type WebhookReceiver } from '../helpers/webhook-receiver.js';
import { createSecretCipher } from '../../src/domain/secret-cipher.js';
import { createTargetGuard, PRIVATE_TARGET, publicOnlyLookup } from '../../src/adapters/webhook-target.guard.js';
import { createWebhookHttpClient } from '../../src/adapters/webhook-http.client.js';

// Nothing here sends traffic anywhere but 127.0.0.1, and the guard is expected to stop even that.
const SECRET = 'whsec_0123456789abcdef';

describe('webhook targets outside local', () => {
  let ctx: TestContext;
  let receiver: WebhookReceiver;
  beforeAll(async () => {
    ctx = await createTestContext({ config: { appEnv: 'sandbox', webhookAllowPrivate: false, webhookRetryScheduleMs: [0, 10] } });
    receiver = await startReceiver();
  });
  afterAll(async () => {
    await ctx.close();
    await receiver.close();
  });

  it.each([
    'http://127.0.0.1/hook',
    'http://169.254.169.254/latest/meta-data',
    'http://10.0.0.1/hook',
    'https://127.0.0.1/hook',
    'https://169.254.169.254/latest/meta-data',
    'https://10.0.0.1/hook',
    'https://192.168.1.10/hook',
    'https://100.64.0.1/hook',
    'https://0.0.0.0/hook',
    'https://[::1]/hook',
    'https://[::ffff:127.0.0.1]/hook',
    'https://[::127.0.0.1]:4200/x',
    'https://[::7f00:1]/hook',
    'https://[::a00:1]/hook',
    'https://[::ffff:7f00:1]/hook',
    'https://[0:0:0:0:0:ffff:7f00:1]/hook',
    'https://[::ffff:10.0.0.1]/hook',
    'https://[64:ff9b::10.0.0.1]/hook',
    'https://[fd00::1]/hook',
    'https://[fe80::1]/hook',
    'https://localhost/hook',
    'https://api.localhost/hook',
  ])('refuses %s at registration', async (url) => {
    const { apiKey } = await ctx.partner();
    const res = await ctx.api(apiKey, { method: 'POST', url: '/api/v1/webhooks', payload: { url, secret: SECRET, events: ['payment.submitted'] } });
    expect(res.statusCode).toBe(400);
    expect(res.json<{ message: string[] }>().message.length).toBeGreaterThan(0);
  });

  it('refuses a name that resolves to loopback (real DNS for localhost, a stub for the rest)', async () => {
    const guard = createTargetGuard({ allowHttp: true, allowPrivate: false });
    expect(await guard.violations('http://127.0.0.1/hook')).toEqual([PRIVATE_TARGET]);
    expect(await guard.violations('http://localhost:8080/hook')).toEqual([PRIVATE_TARGET]);

    const stubbed = createTargetGuard({ allowHttp: false, allowPrivate: false }, async (host) => (host === 'rebind.example' ? ['127.0.0.1'] : ['93.184.216.34']));
    expect(await stubbed.violations('https://rebind.example/hook')).toEqual([PRIVATE_TARGET]);
    expect(await stubbed.violations('https://hooks.example/hook')).toEqual([]);
    expect(await stubbed.violations('http://hooks.example/hook')).toEqual(['url must use https']);
  });

  it('refuses private addresses again at connect time, after DNS resolution', async () => {
    const lookupError = await new Promise<NodeJS.ErrnoException | null>((resolve) => publicOnlyLookup('localhost', {}, (err) => resolve(err)));
    expect(lookupError?.code).toBe('EBLOCKEDTARGET');

    const http = createWebhookHttpClient({ timeoutMs: 1000, allowPrivate: false });
    try {
      const byName = await http.post(`http://localhost:${receiver.port}/hook`, '{}', { 'content-type': 'application/json' });
      const byAddress = await http.post(receiver.url, '{}', { 'content-type': 'application/json' });
      expect(byName).toMatchObject({ ok: false, statusCode: null });
      expect(byAddress).toMatchObject({ ok: false, statusCode: null });
      expect(receiver.received).toHaveLength(0);
    } finally {
      await http.close();
    }
  });

  it('refuses IPv4 carried in IPv6 literals at delivery time', async () => {
    const http = createWebhookHttpClient({ timeoutMs: 1000, allowPrivate: false });
    try {
      for (const host of ['[::127.0.0.1]', '[::ffff:127.0.0.1]', '[0:0:0:0:0:ffff:7f00:1]', '[::a00:1]']) {
        const result = await http.post(`http://${host}:${receiver.port}/hook`, '{}', { 'content-type': 'application/json' });
        expect(result).toEqual({ ok: false, statusCode: null, durationMs: 0, error: 'target address is not allowed' });
      }
      expect(receiver.received).toHaveLength(0);
    } finally {
      await http.close();
    }
  });

  it('does not deliver to a stored webhook whose name now points at loopback', async () => {
    const { id: partnerId, apiKey } = await ctx.partner();
    // Stored directly, as if the name had resolved to a public address at registration time.
    const row = await ctx.deps.db
      .insertInto('webhooks')
      .values({
        partner_id: partnerId,
        url: `http://localhost:${receiver.port}/hook`,
        events: JSON.stringify(['payment.submitted']),
        secret_ciphertext: createSecretCipher(ctx.config.webhookSecretKey).encrypt(SECRET),
      })
      .returning('id')
      .executeTakeFirstOrThrow();
    const invoice = await ctx.api(apiKey, { method: 'GET', url: '/api/v1/invoices/ref/MOF-T-1' });
    const paid = await ctx.api(apiKey, { method: 'POST', url: '/api/v1/payments', payload: { invoiceId: invoice.json<{ id: string }>().id } });
    expect(paid.statusCode).toBe(201);

    await ctx.runJobs();
    expect(receiver.received).toHaveLength(0);
    // The attempt made; its retry is a pending entry of its own.
    const log = await ctx.api(apiKey, { method: 'GET', url: `/api/v1/webhooks/${row.id}/deliveries?status=failed` });
    const items = log.json<{ items: { status: string; error: string }[] }>().items;
    expect(items[0]?.status).toBe('failed');
    expect(items[0]?.error).toMatch(/loopback|not allowed/);
  });
});
