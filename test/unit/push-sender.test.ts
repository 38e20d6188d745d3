import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createFcmPushSender, createPushSender, fcmRequest } from '../../src/adapters/push-sender.js';
import { staticAccessToken } from '../../src/adapters/fcm-access-token.client.js';
import { systemClock } from '../../src/domain/clock.port.js';

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

  it('skips instead of sending unless FCM is configured', async () => {
    const fcm = { serviceAccountFile: null, endpoint: 'https://fcm.googleapis.com' };
    const deps = { log, timeoutMs: 1000, now: systemClock };
    const unconfigured = await createPushSender({ ...fcm, projectId: null, accessToken: null }, deps);
    expect(unconfigured.kind).toBe('log');
    expect(await unconfigured.send('device-token', { title: 'Paid', body: 'Done' })).toBe('skipped');
    expect((await createPushSender({ ...fcm, projectId: 'p', accessToken: null }, deps)).kind).toBe('log');
    expect((await createPushSender({ ...fcm, projectId: 'p', accessToken: 't' }, deps)).kind).toBe('fcm');
  });

  it('refuses a service account file that is not a service account key', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'fcm-key-'));
    const path = join(dir, 'key.json');
    await writeFile(path, JSON.stringify({ type: 'authorized_user', client_email: 'a@b' }));
    const settings = { projectId: 'p', accessToken: null, serviceAccountFile: path, endpoint: 'https://fcm.googleapis.com' };
    await expect(createPushSender(settings, { log, timeoutMs: 1000, now: systemClock })).rejects.toThrow(/not a service account key/);
    await expect(createPushSender({ ...settings, serviceAccountFile: join(dir, 'missing.json') }, { log, timeoutMs: 1000, now: systemClock })).rejects.toThrow(/not a readable JSON file/);
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
    const sender = createFcmPushSender({ projectId: 'demo', tokens: staticAccessToken('tok'), endpoint }, 2000);
    expect(await sender.send('tok-a', { title: 'Paid', body: 'Done' })).toBe('sent');
    await sender.send('tok-b', { title: 'Paid', body: 'Done' });
    expect(seen).toHaveLength(2);
    expect(seen[0]?.url).toBe('/v1/projects/demo/messages:send');
    expect(seen[0]?.headers.authorization).toBe('Bearer tok');
    expect(seen.map((s) => (JSON.parse(s.body) as { message: { token: string } }).message.token).sort()).toEqual(['tok-a', 'tok-b']);

    status = 401;
    await expect(sender.send('tok-a', { title: 'Paid', body: 'Done' })).rejects.toThrow('FCM answered HTTP 401');
  });
});
