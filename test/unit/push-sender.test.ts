import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createFcmPushSender, createPushSender, fcmRequest } from '../../src/adapters/push-sender.js';

const log = { info: vi.fn(), warn: vi.fn(), error: vi.fn() };

describe('FCM HTTP v1 request', () => {
  it('targets messages:send of the project with a bearer token', () => {
    const req = fcmRequest({ projectId: 'gov-pay', accessToken: 'ya29.token', endpoint: 'https://fcm.googleapis.com/' }, 'device-token', {
      title: 'Paid',
      body: 'Your invoice is paid',
      data: { paymentId: 'p1' },
    });
    expect(req.url).toBe('https://fcm.googleapis.com/v1/projects/gov-pay/messages:send');
    expect(req.headers.authorization).toBe('Bearer ya29.token');
    expect(JSON.parse(req.body)).toEqual({
      message: { token: 'device-token', notification: { title: 'Paid', body: 'Your invoice is paid' }, data: { paymentId: 'p1' } },
    });
  });

  it('logs instead of sending unless FCM is configured', async () => {
    expect(createPushSender({ projectId: null, accessToken: null, endpoint: 'https://fcm.googleapis.com' }, log, 1000).kind).toBe('log');
    expect(createPushSender({ projectId: 'p', accessToken: null, endpoint: 'https://fcm.googleapis.com' }, log, 1000).kind).toBe('log');
    expect(createPushSender({ projectId: 'p', accessToken: 't', endpoint: 'https://fcm.googleapis.com' }, log, 1000).kind).toBe('fcm');
  });
});

describe('FCM sender against a local fake FCM', () => {
  const seen: { url: string; headers: IncomingHttpHeaders; body: string }[] = [];
  let status = 200;
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      seen.push({ url: req.url ?? '', headers: req.headers, body });
      res.writeHead(status, { 'content-type': 'application/json' }).end('{"name":"projects/demo/messages/1"}');
    });
  });
  let endpoint = '';
  beforeAll(async () => {
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it('posts one message per token with the bearer token, and rejects on an error answer', async () => {
    const sender = createFcmPushSender({ projectId: 'demo', accessToken: 'tok', endpoint }, 2000);
    await sender.send('tok-a', { title: 'Paid', body: 'Done' });
    await sender.send('tok-b', { title: 'Paid', body: 'Done' });
    expect(seen).toHaveLength(2);
    expect(seen[0]?.url).toBe('/v1/projects/demo/messages:send');
    expect(seen[0]?.headers.authorization).toBe('Bearer tok');
    expect(seen.map((s) => (JSON.parse(s.body) as { message: { token: string } }).message.token).sort()).toEqual(['tok-a', 'tok-b']);

    status = 401;
    await expect(sender.send('tok-a', { title: 'Paid', body: 'Done' })).rejects.toThrow('FCM answered HTTP 401');
  });
});
