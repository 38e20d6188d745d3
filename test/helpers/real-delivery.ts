import { randomBytes } from 'node:crypto';
import { expect } from 'vitest';
import { lookupRef, payOk } from './api.js';
import { createTestContext, type TestContext } from './test-context.js';
import { startReceiver, type WebhookReceiver } from './webhook-receiver.js';

/** One delivery exactly as the service sent it: the body's bytes as text and every header. */
export interface CapturedDelivery {
  /** The webhook's secret, as registered. */
  secret: string;
  event: string;
  body: string;
  headers: Record<string, string>;
}

/** A secret in the Standard Webhooks form (webhook-signature keyed with its decoded bytes), and a plain one (keyed with its UTF-8 bytes). */
export const captureSecrets = (): { standard: string; plain: string } => ({
  standard: `whsec_${randomBytes(32).toString('base64')}`,
  plain: `plain-secret-${randomBytes(8).toString('hex')}`,
});

function flatHeaders(headers: WebhookReceiver['received'][number]['headers']): Record<string, string> {
  return Object.fromEntries(Object.entries(headers).flatMap(([k, v]) => (typeof v === 'string' ? [[k, v]] : Array.isArray(v) ? [[k, v.join(', ')]] : [])));
}

/**
 * Real deliveries: a running service, a partner with one webhook per secret at a local receiver,
 * then a test delivery (`POST /webhooks/{id}/test`) and a payment (`payment.submitted`) to each.
 * Returns what the receivers got, byte for byte.
 */
export async function captureRealDeliveries(secrets: string[] = Object.values(captureSecrets())): Promise<CapturedDelivery[]> {
  let ctx: TestContext | undefined;
  const receivers: WebhookReceiver[] = [];
  try {
    ctx = await createTestContext({ config: { webhookRetryScheduleMs: [0] } });
    const { apiKey } = await ctx.partner();
    const hooks: { secret: string; id: string; receiver: WebhookReceiver }[] = [];
    for (const secret of secrets) {
      const receiver = await startReceiver();
      receivers.push(receiver);
      const res = await ctx.api(apiKey, { method: 'POST', url: '/api/v1/webhooks', payload: { url: receiver.url, secret, events: ['payment.submitted', 'payment.confirmed', 'payment.failed', 'payment.canceled'] } });
      expect(res.statusCode, res.body).toBe(201);
      hooks.push({ secret, id: res.json<{ id: string }>().id, receiver });
    }
    for (const hook of hooks) expect((await ctx.api(apiKey, { method: 'POST', url: `/api/v1/webhooks/${hook.id}/test` })).statusCode).toBe(202);
    const invoice = await lookupRef(ctx, apiKey, 'MOF-T-1');
    await payOk(ctx, apiKey, { invoiceId: invoice.id });
    for (const deadline = Date.now() + 20_000; !hooks.every((h) => h.receiver.received.length >= 2); ) {
      if (Date.now() > deadline) throw new Error(`deliveries did not arrive: ${hooks.map((h) => h.receiver.received.length).join(', ')}`);
      await ctx.runJobs();
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    return hooks.flatMap((h) =>
      h.receiver.received.map((r) => ({ secret: h.secret, event: String(r.headers['x-service-event']), body: r.body, headers: flatHeaders(r.headers) })),
    );
  } finally {
    await ctx?.close();
    await Promise.all(receivers.map((r) => r.close()));
  }
}
