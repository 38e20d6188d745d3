import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { deliveryBody, deliveryHeaders, signBody, standardSigningKey } from '../../src/domain/webhook-message.js';
import { standardSigningKey as sdkSigningKey, verifyWebhook, verifyWebhookRequest } from '../../sdk/src/webhook-node.js';
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

  it("lets the SDK's body check take a list of secrets, any of which may match", () => {
    const body = deliveryBody(message);
    const signature = signBody('the-new-secret-0123456789', body);
    expect(verifyWebhook(body, signature, ['the-old-secret-0123456789', 'the-new-secret-0123456789'])).toBe(true);
    expect(verifyWebhook(body, signature, ['the-old-secret-0123456789'])).toBe(false);
    expect(verifyWebhook(body, signature, [])).toBe(false);
    expect(verifyWebhook(body, signature, ['', 'the-new-secret-0123456789'])).toBe(true);
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

describe('the key of webhook-signature', () => {
  const bytes = (n: number) => Buffer.from(Array.from({ length: n }, (_, i) => (i * 37 + 11) % 256));

  it('is the decoded bytes of whsec_ and standard base64 of 24 to 64 bytes', () => {
    for (const n of [24, 32, 50, 64]) {
      expect(standardSigningKey(`whsec_${bytes(n).toString('base64')}`)).toEqual(bytes(n));
    }
  });

  it("is the secret's UTF-8 bytes otherwise", () => {
    const raw = (secret: string) => expect(standardSigningKey(secret)).toEqual(Buffer.from(secret, 'utf8'));
    raw('partner-chosen-secret-0123456789');
    raw('whsec_0123456789abcdef');
    raw('whsec_recovery_0123456789');
    raw(`whsec_${bytes(23).toString('base64')}`);
    raw(`whsec_${bytes(65).toString('base64')}`);
    raw(`whsec_${bytes(32).toString('base64url')}`);
    raw(`whsec_${bytes(32).toString('base64').replace(/=+$/, '')}`);
    raw(`WHSEC_${bytes(32).toString('base64')}`);
    raw(bytes(32).toString('base64'));
    // The same length and alphabet, but bits past the last byte: not the encoding of any key.
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
    const canonical = bytes(32).toString('base64');
    raw(`whsec_${canonical.slice(0, 42)}${alphabet[alphabet.indexOf(canonical[42] ?? 'A') ^ 1]}=`);
  });

  it("is the same key in the SDK's verifier, which checks both headers of a delivery under a list of secrets", () => {
    const secrets = [`whsec_${bytes(32).toString('base64')}`, `whsec_${bytes(23).toString('base64')}`, `whsec_${bytes(32).toString('base64url')}`, 'plain-secret-0123456789'];
    for (const secret of secrets) expect(sdkSigningKey(secret)).toEqual(standardSigningKey(secret));
    const [current = '', previous = ''] = [secrets[0], secrets[3]];
    const body = deliveryBody(message);
    const sentAt = new Date('2025-03-01T10:00:05.000Z');
    const headers = deliveryHeaders(message, body, [current, previous], sentAt);
    const now = () => sentAt;
    expect(verifyWebhookRequest(body, headers, current, { now })).toBe(true);
    expect(verifyWebhookRequest(body, headers, [previous, current], { now })).toBe(true);
    // The previous secret alone matches webhook-signature but not X-Service-Signature, the current one's.
    expect(verifyWebhookRequest(body, headers, previous, { now })).toBe(false);
    expect(verifyWebhookRequest(body, { ...headers, 'x-service-signature': undefined }, previous, { now })).toBe(true);
  });

  it('keys webhook-signature but never X-Service-Signature', () => {
    const secret = `whsec_${bytes(32).toString('base64')}`;
    const body = deliveryBody(message);
    const headers = deliveryHeaders(message, body, [secret], new Date('2025-03-01T10:00:05.000Z'));
    expect(headers['webhook-signature']).toBe(`v1,${createHmac('sha256', bytes(32)).update(`${message.eventId}.1740823205.${body}`).digest('base64')}`);
    expect(headers['x-service-signature']).toBe(createHmac('sha256', Buffer.from(secret, 'utf8')).update(body).digest('hex'));
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
