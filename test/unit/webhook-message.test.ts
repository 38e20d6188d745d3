import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { deliveryBody, deliveryHeaders, signBody } from '../../src/domain/webhook-message.js';
import { verifyWebhook } from '../../sdk/src/webhook.js';
import { createSecretCipher } from '../../src/domain/secret-cipher.js';

const message = {
  event: 'payment.confirmed' as const,
  eventId: '2d0c6e7a-5b1f-4c3e-8a9d-1e2f3a4b5c6d',
  deliveryId: '7f1c1a52-3c1e-4e57-9d7a-3a3b3f1f0a01',
  createdAt: new Date('2025-03-01T10:00:00.000Z'),
  data: { id: '0b6f3f43-2a5e-4a8c-9a53-0f9d1f7f3a11', amount: 12000.5 },
};

describe('webhook message', () => {
  it('builds the documented envelope, the same bytes every time', () => {
    const body = deliveryBody(message);
    expect(JSON.parse(body)).toEqual({ event: 'payment.confirmed', eventId: message.eventId, deliveryId: message.deliveryId, createdAt: '2025-03-01T10:00:00.000Z', data: message.data });
    expect(deliveryBody({ ...message })).toBe(body);
  });

  it('signs the exact body bytes with lowercase hex HMAC-SHA256', () => {
    const body = deliveryBody(message);
    const signature = signBody('s3cret-s3cret-s3cret', body);
    expect(signature).toBe(createHmac('sha256', 's3cret-s3cret-s3cret').update(body).digest('hex'));
    expect(signature).toMatch(/^[0-9a-f]{64}$/);
    expect(verifyWebhook(body, signature, 's3cret-s3cret-s3cret')).toBe(true);
    expect(verifyWebhook(body + ' ', signature, 's3cret-s3cret-s3cret')).toBe(false);
    expect(verifyWebhook(body, 'abc', 's3cret-s3cret-s3cret')).toBe(false);
  });

  it('sends the event, delivery id, timestamp and signature headers', () => {
    const body = deliveryBody(message);
    const headers = deliveryHeaders(message, body, ['k'.repeat(16)], new Date('2025-03-01T10:00:05.000Z'));
    expect(headers).toMatchObject({
      'content-type': 'application/json',
      'x-service-event': 'payment.confirmed',
      'x-service-delivery': message.deliveryId,
      'x-service-timestamp': '1740823205',
      'x-service-signature': signBody('k'.repeat(16), body),
      'webhook-id': message.eventId,
      'webhook-timestamp': '1740823205',
    });
  });

  it('signs id, timestamp and body the Standard Webhooks way, once per valid secret, the current one first', () => {
    const body = deliveryBody(message);
    const [current, previous] = ['current-secret-0123456789', 'previous-secret-0123456789'];
    const headers = deliveryHeaders(message, body, [current, previous], new Date('2025-03-01T10:00:05.000Z'));
    const v1 = (secret: string) => `v1,${createHmac('sha256', secret).update(`${message.eventId}.1740823205.${body}`).digest('base64')}`;
    expect(headers['webhook-signature']).toBe(`${v1(current)} ${v1(previous)}`);
    expect(headers['x-service-signature']).toBe(signBody(current, body));
  });
});

describe('secret cipher', () => {
  it('round-trips, randomises and rejects tampering or another key', () => {
    const cipher = createSecretCipher('a-configured-key-of-some-length');
    const a = cipher.encrypt('whsec_0123456789abcdef');
    expect(a).not.toBe(cipher.encrypt('whsec_0123456789abcdef'));
    expect(a).not.toContain('whsec');
    expect(cipher.decrypt(a)).toBe('whsec_0123456789abcdef');
    const raw = Buffer.from(a.slice(3), 'base64');
    raw[raw.length - 1] = (raw[raw.length - 1] ?? 0) ^ 1;
    expect(() => cipher.decrypt(`v1:${raw.toString('base64')}`)).toThrow();
    expect(() => createSecretCipher('another-configured-key-entirely').decrypt(a)).toThrow();
  });
});
